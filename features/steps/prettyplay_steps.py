import prettyplay_behave.behave.steps  # noqa: F401
