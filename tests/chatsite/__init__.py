"""The project package: settings, serving, the environment (chatsite/)."""
