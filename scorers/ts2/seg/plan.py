"""Synth step 1 (``ts2 seg plan``): a prompt's typed elements, one prompt per ablation, and its TIFA / DSG questions.

A text model (anything with ``generate(prompts) -> list[str]``: ``scorers.models.text_lm.TextLM`` or a served
``openai:MODEL``, see ``scorers.models.text_backends.load_text_lm``) continues :data:`ELEMENT_FEW_SHOT`: for a prompt
it lists the elements, each typed (``entity``, ``attribute of E``, ``relation of E1, E2``, ``action of E1[, E2]``)
and each with the TIFA questions of ``scorers.metrics.qga.generation`` (a yes/no and a multiple-choice question, read
by its parser). The ablations follow (:func:`ablations`): every element alone, then every pair, ...; removing an
entity removes what depends on it (its attributes, relations and actions), so a set never holds an element together
with an entity it depends on. A second round of requests (:data:`REWRITE_FEW_SHOT`) rewrites the prompt without each
ablation's elements: that is the node's prompt.

The plan (:func:`plan_segs`, saved by :func:`write_plan`) is editable JSON::

    {"version": 1, "model": "...", "segs": [{"seg_id": 0, "prompt": "...", "reason": null, "dropped": [...],
      "elements": [{"label": "dog", "name": "dog", "type": "entity", "of": [], "category": "animal/human",
                    "questions": [{"question": "is there a dog?", "choices": ["yes", "no"], "answer": "yes"}, ...]}],
      "nodes": [{"errors": [], "removed": [], "prompt": "...", "reason": null},
                {"errors": ["dog"], "removed": ["dog", "red"], "prompt": "A ball on the grass.", "reason": null}]}]}

``errors`` is a node's designed error set (the ANNOTATIONS ``errors``); ``removed`` adds what left with a removed
entity. A reply that cannot be read never raises: the prompt gets no elements (or a node no prompt) and a ``reason``.
Beside the plan, :func:`write_plan` writes ``tifa_questions.csv`` and ``dsg_questions.csv`` in the release's layout
(SEG id = the plan's ``seg_id``), so ``ts2 score tifa|dsg`` works on the built SEGs at once.
"""
from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from scorers.atomic import write_text_atomic
from scorers.errors import ParameterError
from scorers.metrics.qga.generation import CATEGORIES, parse_generation
from scorers.stats.error_sets import ERROR_TYPE_OF_ELEMENT

__all__ = ["ELEMENT_COLUMNS", "ELEMENT_FEW_SHOT", "ELEMENT_TYPES", "PLAN_VERSION", "ParsedElements", "REWRITE_FEW_SHOT",
           "ablations", "element_prompt", "parse_elements", "parse_rewrite", "plan_segs", "question_frames",
           "read_plan", "removed_with", "rewrite_prompt", "write_plan", "yes_no_of", "yes_no_question"]

PLAN_VERSION = 1
#: the element types of a plan (the error type an ablation of each makes: stats.error_sets.ERROR_TYPE_OF_ELEMENT)
ELEMENT_TYPES = ("entity", "attribute", "relation", "action")
_TYPE_WORDS = {"entity": "entity", "object": "entity", "attribute": "attribute", "property": "attribute",
               "relation": "relation", "spatial": "relation", "action": "action", "activity": "action"}

ELEMENT_FEW_SHOT = """You check whether an image matches its description. Break the description into visual \
elements. Type each one: entity (a thing, animal or person), attribute of ENTITY (color, count, material, shape...), \
relation of ENTITY, ENTITY (spatial or other), action of ENTITY[, ENTITY]. Give each element one category from: \
object, animal/human, food, activity, attribute, counting, color, material, spatial, location, shape, other. For \
every element write a yes/no question and a multiple-choice question (four choices) that an image faithful to the \
description answers with the given answer.

Description: A red dog chases a ball on the grass.
Element: dog | entity | animal/human
Q: is there a dog? | Choices: yes, no | A: yes
Q: what animal is in the picture? | Choices: dog, cat, horse, cow | A: dog
Element: red | attribute of dog | color
Q: is the dog red? | Choices: yes, no | A: yes
Q: what color is the dog? | Choices: red, black, white, brown | A: red
Element: ball | entity | object
Q: is there a ball? | Choices: yes, no | A: yes
Q: what toy is in the picture? | Choices: ball, frisbee, stick, rope | A: ball
Element: grass | entity | location
Q: is there grass? | Choices: yes, no | A: yes
Q: where is the dog? | Choices: grass, beach, road, snow | A: grass
Element: chases | action of dog, ball | activity
Q: is the dog chasing the ball? | Choices: yes, no | A: yes
Q: what is the dog doing? | Choices: chasing a ball, sleeping, eating, swimming | A: chasing a ball
Element: on | relation of ball, grass | spatial
Q: is the ball on the grass? | Choices: yes, no | A: yes
Q: where is the ball? | Choices: on the grass, in the water, in the air, under a car | A: on the grass
End

"""

REWRITE_FEW_SHOT = """Rewrite the description so that it no longer shows the listed elements, and keep everything \
else. Answer with the rewritten description on one line.

Description: A red dog chases a ball on the grass.
Remove: red (attribute of dog)
Rewritten: A dog chases a ball on the grass.

Description: A red dog chases a ball on the grass.
Remove: ball (entity); chases (action of dog, ball); on (relation of ball, grass)
Rewritten: A red dog on the grass.

"""


@dataclass
class ParsedElements:
    """The elements read from one reply (plan dicts), the lines dropped with reasons, and why none was usable."""

    prompt: str
    elements: list[dict] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    reason: str | None = None


def element_prompt(prompt: str) -> str:
    """The few-shot request listing ``prompt``'s typed elements and questions."""
    return f"{ELEMENT_FEW_SHOT}Description: {' '.join(str(prompt).split())}\n"


_ELEMENT = re.compile(r"^\s*(?:\d+[.)]\s*)?element\s*:\s*(?P<name>[^|]+?)\s*\|\s*(?P<type>[^|]+?)\s*"
                      r"(?:\|\s*(?P<category>[^|]*?)\s*)?$", re.I)


def _parse_type(text: str) -> tuple[str | None, list[str]]:
    """``"attribute of dog"`` -> ``("attribute", ["dog"])``; an unknown type word -> ``(None, [])``."""
    word, _, rest = text.strip().partition(" ")
    kind = _TYPE_WORDS.get(word.strip().lower().rstrip(":"))
    rest = re.sub(r"^\s*(of|between|on|by)\b", "", rest.strip(), flags=re.I)
    of = [part.strip().strip("'\"") for part in re.split(r"\s*(?:,|;|\band\b)\s*", rest) if part.strip()]
    return kind, of


def parse_elements(text: str, prompt: str = "") -> ParsedElements:
    """Typed elements and their questions from a reply in :data:`ELEMENT_FEW_SHOT`'s format (never raises).

    Edge cases
    ----------
    * Question lines are read by ``scorers.metrics.qga.generation.parse_generation`` (numbering, case, spacing);
      a malformed one is dropped with its reason, and an element without a yes/no question gets one written from
      its name (:func:`yes_no_question`).
    * An element line with an unknown type, a dependent element naming no listed entity, or an element repeating
      another's label is dropped with a reason; the dependents of a dropped entity are dropped too.
    * Two elements with the same name get labels ``name (entity)``; the reply stops at ``End`` or the next
      ``Description:``.
    * No usable element at all: ``elements`` is empty and ``reason`` says why.
    """
    out = ParsedElements(str(prompt))
    blocks: list[tuple[int, str, list[str]]] = []
    for number, line in enumerate(str(text or "").splitlines(), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if re.match(r"^(end\b|description\s*:)", stripped, re.I):
            if blocks:
                break
            continue
        if re.match(r"^\s*(?:\d+[.)]\s*)?element\s*:", stripped, re.I):
            blocks.append((number, stripped, []))
        elif blocks:
            blocks[-1][2].append(stripped)
        else:
            out.dropped.append(f"line {number}: text before the first element line: {stripped[:80]!r}")
    entities: dict[str, str] = {}  # lower-case name -> label
    pending = []
    for number, header, lines in blocks:
        match = _ELEMENT.match(header)
        if not match:
            out.dropped.append(f"line {number}: an element line needs 'Element: NAME | TYPE': {header[:80]!r}")
            continue
        name = " ".join(match.group("name").replace(";", ",").split())  # ";" joins labels in ANNOTATIONS
        kind, of = _parse_type(match.group("type"))
        if kind is None:
            out.dropped.append(f"line {number}: element {name!r} has type {match.group('type')!r}, not one of "
                               f"{', '.join(ELEMENT_TYPES)}")
            continue
        category = (match.group("category") or "").strip().lower()
        category = category if category in CATEGORIES else ("object" if kind == "entity" else "other")
        parsed = parse_generation(f"Element: {name} | {category}\n" + "\n".join(lines), prompt)
        out.dropped += [f"element {name!r}: {d}" for d in parsed.dropped]
        questions = [{"question": r["question"], "choices": r["choices"].split("|"), "answer": r["answer"]}
                     for r in parsed.rows]
        element = {"label": name, "name": name, "type": kind, "of": [] if kind == "entity" else of,
                   "category": category, "questions": questions}
        if kind == "entity":
            if name.lower() in entities:
                out.dropped.append(f"line {number}: entity {name!r} is listed twice")
                continue
            entities[name.lower()] = name
        elif not of:
            out.dropped.append(f"line {number}: {kind} {name!r} names no entity ('{kind} of ENTITY')")
            continue
        pending.append((number, element))
    labels: set[str] = set()
    for number, element in pending:
        if element["type"] != "entity":
            unknown = [e for e in element["of"] if e.lower() not in entities]
            if unknown:
                out.dropped.append(f"line {number}: {element['type']} {element['name']!r} depends on "
                                   f"{', '.join(map(repr, unknown))}, which is not a listed entity")
                continue
            element["of"] = [entities[e.lower()] for e in element["of"]]
            if element["name"].lower() in labels or element["name"].lower() in entities:
                element["label"] = f"{element['name']} ({', '.join(element['of'])})"
        if element["label"].lower() in labels:
            out.dropped.append(f"line {number}: element {element['label']!r} is listed twice")
            continue
        labels.add(element["label"].lower())
        if not any(_is_yes_no(q) for q in element["questions"]):
            element["questions"].insert(0, {"question": yes_no_question(element), "choices": ["yes", "no"],
                                             "answer": "yes"})
        out.elements.append(element)
    if not out.elements:
        first = "; ".join(out.dropped[:2])
        out.reason = ("the model's reply lists no usable element" + (f" ({first})" if first else
                      f": {str(text or '').strip()[:80]!r}"))
    return out


def _is_yes_no(question: dict) -> bool:
    return sorted(c.lower() for c in question["choices"]) == ["no", "yes"]


def yes_no_question(element: dict) -> str:
    """A yes/no question written from an element's name and type, for an element the model gave none."""
    name, of = element["name"], element.get("of") or []
    if element["type"] == "entity":
        return f"is there {name}?" if name.lower().startswith(("a ", "an ", "the ")) else f"is there a {name}?"
    if element["type"] == "attribute":
        return f"is the {of[0]} {name}?"
    return f"does the image show {' and '.join(of)} with {name}?" if of else f"does the image show {name}?"


def removed_with(elements: Sequence[dict], errors: Sequence[str]) -> list[str]:
    """The labels gone once ``errors`` are removed: the errors plus, transitively, every element that depends on a
    removed entity (in the elements' order).

    Examples
    --------
    >>> els = [{"label": "dog", "type": "entity", "of": []}, {"label": "red", "type": "attribute", "of": ["dog"]}]
    >>> removed_with(els, ["dog"])
    ['dog', 'red']
    """
    gone = set(errors)
    changed = True
    while changed:
        changed = False
        for element in elements:
            if element["label"] not in gone and any(e in gone for e in element.get("of") or []):
                gone.add(element["label"])
                changed = True
    return [e["label"] for e in elements if e["label"] in gone]


def ablations(elements: Sequence[dict], max_errors: int = 2) -> list[tuple[list[str], list[str]]]:
    """``(errors, removed)`` per ablation: every set of 1..``max_errors`` elements in which no element depends on
    another of the set (removing an entity already removes its attributes), smallest sets first.

    Examples
    --------
    >>> els = [{"label": "dog", "type": "entity", "of": []}, {"label": "red", "type": "attribute", "of": ["dog"]},
    ...        {"label": "ball", "type": "entity", "of": []}]
    >>> [errors for errors, _ in ablations(els)]
    [['dog'], ['red'], ['ball'], ['dog', 'ball'], ['red', 'ball']]
    """
    labels = [e["label"] for e in elements]
    out = []
    for size in range(1, max(0, int(max_errors)) + 1):
        for combo in itertools.combinations(labels, size):
            if any(x in removed_with(elements, [y for y in combo if y != x]) for x in combo):
                continue
            out.append((list(combo), removed_with(elements, combo)))
    return out


def _describe(element: dict) -> str:
    if element["type"] == "entity":
        return f"{element['name']} (entity)"
    return f"{element['name']} ({element['type']} of {', '.join(element['of'])})"


def rewrite_prompt(prompt: str, elements: Sequence[dict], removed: Sequence[str]) -> str:
    """The few-shot request rewriting ``prompt`` without the elements labelled ``removed``."""
    gone = [_describe(e) for e in elements if e["label"] in set(removed)]
    return f"{REWRITE_FEW_SHOT}Description: {' '.join(str(prompt).split())}\nRemove: {'; '.join(gone)}\nRewritten:"


def parse_rewrite(text: str, prompt: str) -> tuple[str, str | None]:
    """``(node prompt, reason)`` from a rewrite reply: its first non-empty line, a leading ``Rewritten:`` and
    quotes taken off. An empty reply or one repeating ``prompt`` gives ``("", reason)``."""
    for line in str(text or "").splitlines():
        line = re.sub(r"^\s*(rewritten|description)\s*:\s*", "", line.strip(), flags=re.I).strip().strip("\"'`")
        if line:
            if " ".join(line.lower().split()) == " ".join(str(prompt).lower().split()):
                return "", "the model's rewrite repeats the prompt unchanged"
            return line, None
    return "", f"the model's rewrite is empty: {str(text or '')[:80]!r}"


def plan_segs(prompts: Sequence[str], lm: Any, *, max_errors: int = 2, first_id: int = 0,
              model_name: str | None = None) -> dict:
    """The plan of ``prompts`` (SEG ids ``first_id``, ``first_id + 1``...): elements, ablation nodes, node prompts.

    Two rounds of ``lm.generate``: one request per prompt (elements and questions), then one per ablation (its
    prompt). Never raises for a bad reply: see :func:`parse_elements` and :func:`parse_rewrite`.

    Raises
    ------
    ParameterError
        no prompt, an empty prompt, or ``max_errors`` < 1.
    """
    prompts = [" ".join(str(p).split()) for p in prompts]
    if not prompts:
        raise ParameterError("{prompts} is empty: give at least one prompt")
    empty = [k for k, p in enumerate(prompts) if not p]
    if empty:
        raise ParameterError("{prompts} item {k} is empty", k=empty[0])
    if int(max_errors) < 1:
        raise ParameterError("{max_errors} must be >= 1, got {n}", n=max_errors)
    replies = lm.generate([element_prompt(p) for p in prompts])
    segs, requests = [], []
    for k, (prompt, reply) in enumerate(zip(prompts, replies)):
        parsed = parse_elements(reply, prompt)
        seg = {"seg_id": int(first_id) + k, "prompt": prompt, "reason": parsed.reason, "dropped": parsed.dropped,
               "elements": parsed.elements,
               "nodes": [{"errors": [], "removed": [], "prompt": prompt, "reason": None}]}
        for errors, removed in ablations(parsed.elements, max_errors):
            node = {"errors": errors, "removed": removed, "prompt": "", "reason": None}
            seg["nodes"].append(node)
            requests.append((node, rewrite_prompt(prompt, parsed.elements, removed), prompt))
        segs.append(seg)
    if requests:
        rewrites = lm.generate([r[1] for r in requests])
        for (node, _, prompt), text in zip(requests, rewrites):
            node["prompt"], node["reason"] = parse_rewrite(text, prompt)
    return {"version": PLAN_VERSION, "model": model_name or getattr(lm, "name", None), "max_errors": int(max_errors),
            "segs": segs}


#: the columns a plan's question tables add to the release's layout: the element (error label) a question checks and
#: the error type its removal makes (``ts2 elements`` reads them)
ELEMENT_COLUMNS = ("element", "element_type")


def _element_columns(element: dict) -> dict:
    return {"element": element["label"], "element_type": ERROR_TYPE_OF_ELEMENT.get(element.get("type"), "")}


def question_frames(plan: dict):
    """``(tifa, dsg)`` question tables of a plan, in the release's layout (``id, prompt, question_id[,
    parent_question_id], question, choices, answer``) plus :data:`ELEMENT_COLUMNS` (``element``: the label of the
    element a question checks, as a node's ``errors`` name it; ``element_type``: missing / attribute / relation /
    action), validated by ``scorers.metrics.qga.questions``.

    TIFA: every question of every element. DSG: each element's yes/no question; an attribute, relation or action
    depends on the questions of its entities. SEGs without elements have no rows.
    """
    import pandas as pd

    from scorers.metrics.qga.questions import questions_from_records

    tifa, dsg = [], []
    for seg in plan["segs"]:
        ids: dict[str, int] = {}
        questions = [(element, q) for element in seg["elements"] for q in element["questions"]]
        tifa += [{"id": seg["seg_id"], "prompt": seg["prompt"], "question_id": k, "question": q["question"],
                  "choices": "|".join(q["choices"]), "answer": q["answer"], **_element_columns(element)}
                 for k, (element, q) in enumerate(questions)]
        for element in seg["elements"]:
            parents = [ids[e] for e in element.get("of") or [] if e in ids]
            ids[element["label"]] = len(ids)
            dsg.append({"id": seg["seg_id"], "prompt": seg["prompt"], "question_id": ids[element["label"]],
                        "parent_question_id": "-".join(map(str, parents)) if parents else "-1",
                        "question": yes_no_of(element), "choices": "yes|no", "answer": "yes",
                        **_element_columns(element)})
    tifa_cols = ["id", "prompt", "question_id", "question", "choices", "answer", *ELEMENT_COLUMNS]
    dsg_cols = ["id", "prompt", "question_id", "parent_question_id", "question", "choices", "answer", *ELEMENT_COLUMNS]
    questions_from_records(tifa, kind="tifa", source="plan (tifa questions)")
    questions_from_records(dsg, kind="dsg", source="plan (dsg questions)")
    return pd.DataFrame(tifa, columns=tifa_cols), pd.DataFrame(dsg, columns=dsg_cols)


def yes_no_of(element: dict) -> str:
    """An element's first yes/no question (the one DSG and ``ts2 seg check`` ask)."""
    for question in element.get("questions") or []:
        if _is_yes_no(question):
            return question["question"]
    return yes_no_question(element)


def write_plan(plan: dict, out: str | Path) -> dict[str, Path]:
    """Write the plan JSON at ``out`` and ``tifa_questions.csv`` / ``dsg_questions.csv`` beside it; returns the
    paths by name (``plan``, ``tifa_questions``, ``dsg_questions``)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, json.dumps(plan, indent=2, ensure_ascii=False) + "\n")
    paths = {"plan": out}
    for name, frame in zip(("tifa_questions", "dsg_questions"), question_frames(plan)):
        paths[name] = out.parent / f"{name}.csv"
        write_text_atomic(paths[name], frame.to_csv(index=False))
    return paths


def read_plan(path: str | Path) -> dict:
    """A plan file, checked after a person's edits; one ``ValueError`` line naming the SEG, node and field.

    Raises
    ------
    ValueError
        not JSON, no ``segs`` list, a SEG without ``seg_id`` / ``prompt`` or with a repeated ``seg_id``, an element
        without a label or type (or with a ``;`` in its label), a node error that is no element's label, two nodes
        with the same error set.
    """
    path = Path(path)
    try:
        plan = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not a readable plan file ({error})") from None
    if not isinstance(plan, dict) or not isinstance(plan.get("segs"), list):
        raise ValueError(f"{path}: a plan is a JSON object with a 'segs' list (write one with `ts2 seg plan`)")
    seen = set()
    for k, seg in enumerate(plan["segs"]):
        where = f"{path}: segs[{k}]"
        if not isinstance(seg, dict) or not isinstance(seg.get("seg_id"), int) or \
                not str(seg.get("prompt", "")).strip():
            raise ValueError(f"{where}: needs an integer 'seg_id' and a non-empty 'prompt'")
        if seg["seg_id"] in seen:
            raise ValueError(f"{where}: seg_id {seg['seg_id']} is used twice")
        seen.add(seg["seg_id"])
        seg.setdefault("elements", [])
        seg.setdefault("nodes", [{"errors": [], "removed": [], "prompt": seg["prompt"], "reason": None}])
        labels = set()
        for j, element in enumerate(seg["elements"]):
            if not str(element.get("label", "")).strip() or element.get("type") not in ELEMENT_TYPES:
                raise ValueError(f"{where}.elements[{j}]: needs a 'label' and a 'type' in {list(ELEMENT_TYPES)}")
            if ";" in element["label"]:
                raise ValueError(f"{where}.elements[{j}]: label {element['label']!r} has a ';', which joins the "
                                 "labels of an ANNOTATIONS errors cell")
            element.setdefault("of", [])
            element.setdefault("name", element["label"])
            element.setdefault("questions", [])
            labels.add(element["label"])
        sets = set()
        for j, node in enumerate(seg["nodes"]):
            errors = node.get("errors")
            if not isinstance(errors, list):
                raise ValueError(f"{where}.nodes[{j}]: 'errors' must be a list of element labels")
            unknown = [e for e in errors if e not in labels]
            if unknown:
                raise ValueError(f"{where}.nodes[{j}]: error {unknown[0]!r} is not the label of an element of SEG "
                                 f"{seg['seg_id']} ({sorted(labels)})")
            if frozenset(errors) in sets:
                raise ValueError(f"{where}.nodes[{j}]: error set {sorted(errors)} is planned twice")
            sets.add(frozenset(errors))
            node.setdefault("prompt", "")
            node.setdefault("reason", None)
            node["removed"] = removed_with(seg["elements"], errors)
    return plan
