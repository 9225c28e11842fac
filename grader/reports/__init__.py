"""Reports of a scored submission: the formats (table, JSON, Gradescope, JUnit, Markdown), the
HTML hiring report and the terminal console."""
