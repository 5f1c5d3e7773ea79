"""The verification as one typed object, rendered: terminal, Markdown, JUnit, plot."""
