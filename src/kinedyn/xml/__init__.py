"""Readers: model text -> element tree with source lines (MJCF today; URDF next)."""
