"""Reusable widgets of the terminal UI."""
