"""Pictures of models and runs: matplotlib plots (``plotting``) and animations (``render``)."""
