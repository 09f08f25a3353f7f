"""What the service's wire contract fixes: error bodies, parameter and ID rules, time formats."""
