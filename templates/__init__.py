"""The jinja2 templates (prompts and the HTML report), installed as prettyplay_behave.templates."""
