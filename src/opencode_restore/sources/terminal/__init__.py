"""Raw terminal recordings (``script``/asciinema-style captures) of a coding agent's screen."""
