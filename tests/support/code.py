"""Step code as the tests write it: ``step(body)`` is the complete step function whose body is
``body``, the form an LLM's answer and a cache entry hold; ``answering`` scripts the LLM server
to answer such code."""

from __future__ import annotations

import textwrap

from tests.support.llm_server import CLEAN_GATE, ScriptedLLMServer, code_answer

HEADER = "def step(page) -> None:"


def step(body: str) -> str:
    """``def step(page) -> None:`` with ``body`` indented under it. ``body`` may be written
    indented (a triple-quoted block): its common indent and its leading and trailing blank lines
    go; every other line, blank ones too, is kept."""
    lines = textwrap.dedent(body).strip("\n").split("\n")
    return HEADER + "\n" + "".join(f"    {line}\n" for line in lines)


def answering(llm: ScriptedLLMServer, answers: dict[str, str], classify: str | None = None) -> None:
    """Script ``llm`` to answer each sentence of ``answers`` with the step code of its body
    (see ``step``) and to pass every gate; with ``classify``, to give that answer to every
    classification of a red step."""
    for sentence, body in answers.items():
        llm.on("generate", code_answer(step(body)), step=sentence)
    llm.on("gate", CLEAN_GATE, repeat=True)
    if classify is not None:
        llm.on("classify", classify, repeat=True)
