"""The UI's screens, one per view of the node."""
