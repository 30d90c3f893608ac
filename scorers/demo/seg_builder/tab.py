"""The demo's Build a SEG tab: a SEG's images with the prompt's elements as checkboxes, each tick saved at once.

The Real and Nat procedures (and the review of Synth) end with one fact per image: which of the prompt's elements it
gets wrong. The tab edits that in an ANNOTATIONS file (:class:`scorers.demo.seg_builder.annotations.SegAnnotations`): the one
the demo was started with (``AppConfig.annotations``, ``ts2 demo --annotations``) or one uploaded in the tab
(:func:`scorers.demo.seg_builder.upload.open_upload`: a working copy on the server, kept per browser). Node labels and the graph
update as one ticks; **Build data dir** offers what ``ts2 seg build`` writes, zipped. Gradio is imported only inside
:func:`build_seg_builder_tab`.
"""
from __future__ import annotations

import threading
from typing import Callable

import pandas as pd

from scorers.demo.seg_builder.annotations import SegAnnotations, open_annotations
from scorers.demo.seg_builder.upload import missing_images, open_upload
from scorers.stats.error_sets import ERROR_TYPES, split_error_labels

__all__ = ["COLUMNS", "SLOTS", "OpenBooks", "build_seg_builder_tab"]

#: images shown per page of a SEG (each with its checkboxes); a SEG with more gets pages
SLOTS = 12
#: slots per row of the page
COLUMNS = 4

INTRO = """\
**Build a SEG** (the Real and Nat procedures, and the review of Synth): each image gets the set of the prompt's
elements it gets **wrong**. Tick them under each image; images with the same set share a node (`0` = no error, `1a`,
`1b`... = one error), and the graph below updates as you tick. Every tick is saved at once to the ANNOTATIONS file,
so closing the page loses nothing. **Build data dir** runs `ts2 seg build` on it and offers the result as a zip.
"""

NOT_CONFIGURED = """\
*No ANNOTATIONS file is open.* Upload one and its images below, or start the demo with one, e.g. after
`ts2 seg generate PROMPTS --pipeline P --real 20 --out DIR`:
`ts2 demo --annotations DIR/real_annotations.csv --images DIR` (on a Space: the `TS2_ANNOTATIONS` and
`TS2_SEG_IMAGES` variables). The file is a CSV with one row per image: `seg_id, prompt, file_name, errors` (errors
`;`-joined, empty for an error-free image), as `ts2 seg build` reads it.
"""


class OpenBooks:
    """The ANNOTATIONS files the tab has open: the configured one (key ``""``) and one per upload, under a random
    key that the browser keeps (``gr.BrowserState``), so a reloaded page finds its upload again."""

    def __init__(self, configured: SegAnnotations | None):
        self._books: dict[str, SegAnnotations] = {"": configured} if configured is not None else {}
        self._lock = threading.Lock()

    def get(self, key) -> SegAnnotations | None:
        """The book of ``key``; the configured one for an unknown key (a server restarted since); None if none."""
        return self._books.get(key or "") or self._books.get("")

    def has_upload(self, key) -> bool:
        return bool(key) and key in self._books

    def add(self, book: SegAnnotations) -> str:
        import uuid

        key = uuid.uuid4().hex
        with self._lock:
            self._books[key] = book
        return key


# ----------------------------------------------------------------------------------------------------------------------
# The tab
# ----------------------------------------------------------------------------------------------------------------------


def _pages(n_images: int) -> list[tuple[str, int]]:
    n = max(1, -(-n_images // SLOTS))
    return [(f"images {k * SLOTS + 1}-{min(n_images, (k + 1) * SLOTS)}", k) for k in range(n)]


def build_seg_builder_tab(config, *, demo, error: Callable[[str], str],
                          unexpected: Callable[[Exception], str]) -> None:
    """The Build a SEG tab's widgets (inside ``gr.Tab``); ``demo``: the Blocks, whose page load re-reads the file so a
    reloaded page shows what was saved. The file is the one ``config`` names, or one uploaded in the tab (a working
    copy, kept for the browser that uploaded it). Handlers never raise into gradio: an error is one line in the tab's
    status."""
    import gradio as gr

    gr.Markdown(INTRO, elem_id="segb-intro")
    configured, problem = None, None
    try:
        configured = open_annotations(config)
    except (ValueError, OSError) as failure:
        problem = error(str(failure))
    books = OpenBooks(configured)
    if configured is None:
        gr.Markdown(problem or NOT_CONFIGURED, elem_id="segb-problem")
    # the upload this browser opened (its key), kept across reloads
    book_key = gr.BrowserState("", storage_key="ts2-seg-builder-upload")
    with gr.Accordion("Open an uploaded ANNOTATIONS file", open=configured is None, elem_id="segb-upload"):
        gr.Markdown("Upload the CSV and its images (image files or a zip that keeps the folders `file_name` names). "
                    "The tab then works on a copy on this server, saved at each tick: download it below when done.")
        with gr.Row():
            upload_csv = gr.File(label="ANNOTATIONS CSV", file_types=[".csv"], type="filepath",
                                 elem_id="segb-upload-csv")
            upload_images = gr.File(label="Images (files or a .zip)", file_count="multiple", type="filepath",
                                    elem_id="segb-upload-images")
        open_button = gr.Button("Open the uploaded files", elem_id="segb-open")
    status = gr.Markdown("", elem_id="segb-status")

    first = configured.seg_ids()[0] if configured is not None else None
    with gr.Column(visible=configured is not None, elem_id="segb-editor") as editor:
        file_line = gr.Markdown("", elem_id="segb-file")
        with gr.Row():
            seg_pick = gr.Dropdown(configured.choices() if configured is not None else [], value=first, label="SEG",
                                   elem_id="segb-pick", scale=3)
            page_pick = gr.Dropdown(_pages(len(configured.rows(first))) if configured is not None else [],
                                    value=0 if configured is not None else None, label="Page", elem_id="segb-page",
                                    scale=1)
        summary = gr.Markdown("", elem_id="segb-summary")
        with gr.Row():
            new_name = gr.Textbox(label="New element (what an image can get wrong)", elem_id="segb-new-element",
                                  scale=3, max_length=200)
            new_type = gr.Dropdown([("(no type)", "")] + [(t, t) for t in ERROR_TYPES], value="", label="Type",
                                   elem_id="segb-new-type", scale=1)
            add_button = gr.Button("Add element", elem_id="segb-add", scale=1)
        groups, images, notes, boxes = [], [], [], []
        for start in range(0, SLOTS, COLUMNS):
            with gr.Row(equal_height=False):
                for k in range(start, start + COLUMNS):
                    with gr.Column(visible=False, min_width=200) as group:
                        images.append(gr.Image(None, type="pil", interactive=False, show_label=False, height=200,
                                               elem_id=f"segb-image-{k}"))
                        notes.append(gr.Markdown("", elem_id=f"segb-note-{k}"))
                        boxes.append(gr.CheckboxGroup([], value=[], label="", elem_id=f"segb-errors-{k}"))
                    groups.append(group)
        confirm_button = gr.Button("Confirm the sets shown (mark this page's images reviewed)", size="sm",
                                   elem_id="segb-confirm")
        with gr.Row():
            with gr.Column(scale=1):
                nodes = gr.Dataframe(pd.DataFrame(columns=["file_name", "errors", "node", "reviewed", "judge"]),
                                     interactive=False, label="Node of each image", elem_id="segb-nodes")
            with gr.Column(scale=1):
                graph = gr.Plot(label="Error graph", elem_id="segb-graph")
        with gr.Row():
            build_button = gr.Button("Build data dir (ts2 seg build)", variant="primary", elem_id="segb-build")
            download = gr.File(label="Built data dir (zip)", interactive=False, elem_id="segb-download")
        annotations_file = gr.File(label="The ANNOTATIONS file being edited (the uploaded copy)", interactive=False,
                                   visible=False, elem_id="segb-annotations-file")

    def book_of(key) -> SegAnnotations:
        book = books.get(key)
        if book is None:
            raise ValueError("no ANNOTATIONS file is open: upload one above, or start the demo with "
                             "`ts2 demo --annotations FILE --images DIR`")
        return book

    def page_rows(book, seg_id, page) -> pd.DataFrame:
        rows = book.rows(seg_id)
        page = int(page or 0)
        return rows.iloc[page * SLOTS:(page + 1) * SLOTS]

    def slot_label(file_name: str, node: str, reviewed: str) -> str:
        return f"{file_name} · node {node}{' · ✓ reviewed' if reviewed == 'yes' else ''} · wrong:"

    def graph_outputs(book, seg_id):
        return book.summary(seg_id), book.nodes(seg_id), book.figure(seg_id)

    def working_copy(book):
        """The uploaded file's working copy as it is now (gradio serves a snapshot of a file: renewed at each save)."""
        return gr.update(value=str(book.path), visible=True) if book.uploaded else gr.update(visible=False)

    def labels_only(book, seg_id, page):
        """Each slot's checkbox label (its node), as the node labels of every image may change with one tick."""
        shown = page_rows(book, seg_id, page)
        table = book.nodes(seg_id).set_index("file_name")
        out = [gr.update(label=slot_label(f, table.at[f, "node"], table.at[f, "reviewed"])) for f in shown["file_name"]]
        return out + [gr.update()] * (SLOTS - len(out))

    def render(book, seg_id, page):
        """Every output of a SEG page: the editor, the SEG picker, slots (group, image, note, checkboxes), summary,
        nodes, graph, pages, the working copy's download."""
        book.refresh()
        seg_id = str(seg_id) if seg_id is not None and str(seg_id) in book.seg_ids() else book.seg_ids()[0]
        pages = _pages(len(book.rows(seg_id)))
        page = int(page) if page is not None and 0 <= int(page) < len(pages) else 0
        shown = page_rows(book, seg_id, page)
        elements = book.elements(seg_id)
        table = book.nodes(seg_id).set_index("file_name")
        slot_groups, slot_images, slot_notes, slot_boxes = [], [], [], []
        for k in range(SLOTS):
            if k < len(shown):
                row = shown.iloc[k]
                name = row["file_name"]
                slot_groups.append(gr.update(visible=True))
                slot_images.append(book.image(name))
                slot_notes.append(f"**Judge:** {row['note']}" if row["note"] else "")
                slot_boxes.append(gr.update(choices=elements, value=split_error_labels(row["errors"]),
                                            label=slot_label(name, table.at[name, "node"], table.at[name, "reviewed"])))
            else:
                slot_groups.append(gr.update(visible=False))
                slot_images.append(None)
                slot_notes.append("")
                slot_boxes.append(gr.update(choices=[], value=[]))
        where = "a working copy of your upload" if book.uploaded else f"`{book.path}`"
        line = f"Saving to {where} (images from `{book.images}`)"
        missing = missing_images(book)
        if missing:
            line += f"; *{len(missing)} image file(s) not found, e.g. `{missing[0]}`*"
        return (gr.update(visible=True), line, gr.update(choices=book.choices(), value=seg_id), *slot_groups,
                *slot_images, *slot_notes, *slot_boxes, *graph_outputs(book, seg_id),
                gr.update(choices=pages, value=page), working_copy(book))

    view_outputs = [editor, file_line, seg_pick, *groups, *images, *notes, *boxes, summary, nodes, graph, page_pick,
                    annotations_file]

    def on_view(key, seg_id, page):
        try:
            book = books.get(key)
            if book is None:  # nothing open yet: the upload box says what to do
                return (*([gr.update()] * len(view_outputs)), "")
            return (*render(book, seg_id, page), "")
        except ValueError as problem:
            return (*([gr.update()] * len(view_outputs)), error(str(problem)))
        except Exception as problem:
            return (*([gr.update()] * len(view_outputs)), unexpected(problem))

    def on_seg(key, seg_id):
        return on_view(key, seg_id, 0)

    def on_key(key):
        """The browser's stored upload key arrived (or an upload was opened): that file's first SEG. No upload of
        this server under it (none yet, or the server restarted): the page load's view stays."""
        if not books.has_upload(key):
            return (*([gr.update()] * len(view_outputs)), gr.update())
        *view, note = on_view(key, None, 0)
        return (*view, note or gr.update())  # an error, else the status line as it is ("Opened ...")

    def on_open(key, csv_path, image_paths):
        try:
            if not csv_path:
                raise ValueError("upload the ANNOTATIONS CSV first")
            book = open_upload(csv_path, image_paths or [], max_bytes=config.max_upload_bytes)
            key = books.add(book)
            n_missing = len(missing_images(book))
            note = (f"Opened `{book.path.name}`: {len(book.seg_ids())} SEG(s), {len(book.frame)} images"
                    + (f"; {n_missing} image file(s) not found among the uploads" if n_missing else ""))
            return (key, *render(book, None, 0), note)
        except ValueError as problem:
            return (key, *([gr.update()] * len(view_outputs)), error(str(problem)))
        except Exception as problem:
            return (key, *([gr.update()] * len(view_outputs)), unexpected(problem))

    def on_tick(k):
        def handler(key, seg_id, page, ticked):
            try:
                book = book_of(key)
                shown = page_rows(book, seg_id, page)
                if k >= len(shown):
                    raise ValueError("this image slot is empty: pick the SEG again")
                file_name = shown["file_name"].iloc[k]
                saved = book.set_errors(seg_id, file_name, ticked)
                note = f"Saved `{file_name}`: " + ("; ".join(saved) if saved else "no error")
                return (*labels_only(book, seg_id, page), *graph_outputs(book, seg_id), working_copy(book), note)
            except ValueError as problem:
                return (*([gr.update()] * (SLOTS + 4)), error(str(problem)))
            except Exception as problem:
                return (*([gr.update()] * (SLOTS + 4)), unexpected(problem))
        return handler

    def on_confirm(key, seg_id, page):
        try:
            book = book_of(key)
            n = book.confirm(seg_id, page_rows(book, seg_id, page)["file_name"])
            return (*labels_only(book, seg_id, page), *graph_outputs(book, seg_id), working_copy(book),
                    f"Confirmed {n} image(s) of SEG {seg_id} as they are (marked reviewed)")
        except ValueError as problem:
            return (*([gr.update()] * (SLOTS + 4)), error(str(problem)))
        except Exception as problem:
            return (*([gr.update()] * (SLOTS + 4)), unexpected(problem))

    def on_add(key, seg_id, page, name, kind):
        try:
            book = book_of(key)
            elements = book.add_element(seg_id, name, kind or None)
            updates = [gr.update(choices=elements) for _ in range(len(page_rows(book, seg_id, page)))]
            updates += [gr.update()] * (SLOTS - len(updates))
            return (*updates, "", f"Added the element `{name.strip()}` to SEG {seg_id}: tick it where an image gets "
                                  "it wrong")
        except ValueError as problem:
            return (*([gr.update()] * SLOTS), gr.update(), error(str(problem)))
        except Exception as problem:
            return (*([gr.update()] * SLOTS), gr.update(), unexpected(problem))

    def on_build(key):
        try:
            archive, result = book_of(key).build()
            warnings = list(getattr(result, "warnings", []) or [])
            line = (f"**Built** {result.n_segs} SEG(s), {result.n_images} images: `{archive.name}` below "
                    f"(a data dir for `ts2 score/meta/report --data-dir`).")
            if warnings:
                line += f" {len(warnings)} warning(s): " + "; ".join(warnings[:5]) + ("..." if len(warnings) > 5
                                                                                       else "")
            return str(archive), line
        except (ValueError, OSError) as problem:
            return None, error(str(problem).strip().splitlines()[0] if str(problem).strip() else repr(problem))
        except Exception as problem:
            return None, unexpected(problem)

    seg_pick.select(on_seg, [book_key, seg_pick], [*view_outputs, status])
    page_pick.select(on_view, [book_key, seg_pick, page_pick], [*view_outputs, status])
    for k, box in enumerate(boxes):
        # .input: the person's ticks only (not the values a view sets)
        box.input(on_tick(k), [book_key, seg_pick, page_pick, box],
                  [*boxes, summary, nodes, graph, annotations_file, status])
    confirm_button.click(on_confirm, [book_key, seg_pick, page_pick],
                         [*boxes, summary, nodes, graph, annotations_file, status])
    add_button.click(on_add, [book_key, seg_pick, page_pick, new_name, new_type], [*boxes, new_name, status])
    build_button.click(on_build, [book_key], [download, status])
    open_button.click(on_open, [book_key, upload_csv, upload_images], [book_key, *view_outputs, status])
    # a (re)loaded page shows what the file holds now, not what it held when the app started
    demo.load(on_view, [book_key, seg_pick, page_pick], [*view_outputs, status])
    # the browser's stored upload key arrives after the page load event: show that upload when it does
    book_key.change(on_key, [book_key], [*view_outputs, status])
