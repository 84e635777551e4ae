"""A small to-do app for the step library's tests, in three variants: as written, with its new
to-do field renamed, and with a counter that is off by one (a product defect)."""

from __future__ import annotations

PAGE = """<!doctype html><title>Todos</title><h1>todos</h1>
<input class="new-todo" placeholder="{placeholder}" aria-label="New todo">
<ul class="todo-list" aria-label="Todos"></ul>
<span class="todo-count" data-testid="count"></span>
<script>
const items = [];
const input = document.querySelector(".new-todo");
input.addEventListener("keydown", (event) => {{
  if (event.key === "Enter" && input.value.trim()) {{
    items.push({{ title: input.value.trim(), done: false }});
    input.value = "";
    render();
  }}
}});
function render() {{
  const list = document.querySelector(".todo-list");
  list.replaceChildren(...items.map((item, index) => {{
    const row = document.createElement("li");
    const toggle = document.createElement("input");
    toggle.type = "checkbox";
    toggle.checked = item.done;
    toggle.setAttribute("aria-label", "Toggle " + item.title);
    toggle.addEventListener("change", () => {{ item.done = toggle.checked; render(); }});
    const label = document.createElement("label");
    label.textContent = item.title;
    const remove = document.createElement("button");
    remove.textContent = "×";
    remove.setAttribute("aria-label", "Delete " + item.title);
    remove.addEventListener("click", () => {{ items.splice(index, 1); render(); }});
    row.append(toggle, label, remove);
    return row;
  }}));
  const left = items.filter((item) => !item.done).length + {off_by};
  document.querySelector(".todo-count").textContent =
    left + (left === 1 ? " item left" : " items left");
}}
render();
</script>"""

VARIANTS = {
    "normal": {"placeholder": "What needs to be done?", "off_by": 0},
    "renamed": {"placeholder": "Add a todo", "off_by": 0},
    "broken": {"placeholder": "What needs to be done?", "off_by": 1},
}


def todo_page(variant: str = "normal") -> str:
    return PAGE.format(**VARIANTS[variant])


FIELD = 'page.get_by_placeholder("What needs to be done?")'
# the code a model writes for each sentence template, taking the values as parameters
CODE = {
    "I open the todo app": 'page.goto("/")',
    'I add a todo "{}"': f'{FIELD}.fill(value)\n{FIELD}.press("Enter")',
    'the list shows "{}"': (
        'expect(page.get_by_role("listitem").filter(has_text=value)).to_be_visible()'
    ),
    'the counter shows "{}"': 'expect(page.get_by_test_id("count")).to_have_text(value)',
    'I complete the todo "{}"': 'page.get_by_role("checkbox", name=f"Toggle {value}").check()',
    'I delete the todo "{}"': 'page.get_by_role("button", name=f"Delete {value}").click()',
    'the todo "{}" is completed': (
        'expect(page.get_by_role("checkbox", name=f"Toggle {value}")).to_be_checked()'
    ),
}


def step_code(template: str) -> str:
    body = "".join(f"    {line}\n" for line in CODE[template].splitlines())
    parameter = ", value" if "{}" in template else ""
    return f"def step(page{parameter}) -> None:\n{body}"


RENAMED_FIELD = 'page.get_by_placeholder("Add a todo")'
# steps on the new-todo field alone: a rename of its placeholder breaks each of them
TYPING = {
    'I type "{}" into the new todo field': f"{FIELD}.fill(value)",
    'the new todo field says "{}"': f"expect({FIELD}).to_have_value(value)",
    "I clear the new todo field": f"{FIELD}.clear()",
    "the new todo field is empty": f"expect({FIELD}).to_be_empty()",
}
