"""The ``kinedyn`` command (``main``), the demo it runs and the benchmark harness."""
