"""The jinja2 templates (prompts, the HTML report, the files of ``prettyplay init`` and
``prettyplay export``), installed as prettyplay_behave.templates."""
