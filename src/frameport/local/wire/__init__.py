"""What the service fixes on the wire: error bodies, parameter and ID rules, time formats
(service interface, "Errors", "IDs", "Dates and lists")."""
