"""The prompt templates (jinja2), installed as prettyplay_behave.templates."""
