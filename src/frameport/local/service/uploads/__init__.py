"""Chunked uploads (files and deployments), their durable writes and crash recovery, and the
check a deployment archive gets in place of a build."""
