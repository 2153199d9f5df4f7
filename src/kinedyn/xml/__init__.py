"""Readers: model text -> element tree with source lines (MJCF; URDF translated to the MJCF tree)."""
