"""Downloads and previews (service interface, "Downloads and previews"): stored bytes whole
or by range, and file previews."""
