"""Every key of ``st.session_state`` that the screen code names, declared once: its type, the
module that owns it (draws its widget, or writes it first) and what it carries.

The rule (tests/test_session_keys.py checks it on every pages/**/*.py):
- a key read or written through ``st.session_state`` (``[...]``, ``get``, ``setdefault``,
  ``pop``, ``update``, ``in``, ``del``, a ``__setitem__`` callback) is one of the constants
  below, or a family's key built by one of the functions below, never a literal;
- a widget's ``key="..."`` stays a literal beside its widget: it is also the control's name
  in the URL and its ``st-key-…`` class, which links, lessons and tests read from the
  source. When that string is also named through ``st.session_state`` (by another module, a
  callback, a link's handoff), it is declared here: ``key="atlas_n"`` is ``ATLAS_N``. A
  widget's own key, never named through ``st.session_state`` (``key="atlas_sort"``), and a
  figure's state key, handed to its ``mount`` (``FIGURE = "basics-figure"``), are not.
The values are the strings the keys always had: a link, a test or a kept session reads the
same state as before.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Declared:
    """One key: ``key`` (the string; a family's prefix), the type of its value, the file
    that owns it (from the repository root) and what it carries between whom."""

    key: str
    type: str
    owner: str
    carries: str


DECLARED: dict[str, Declared] = {}


def _key(key: str, type: str, owner: str, carries: str) -> str:
    DECLARED[key] = Declared(key, type, owner, carries)
    return key


# -- every page: the sidebar, links, background work -------------------------------------------
DEVICE = _key("device", "str", "app.py", "the sidebar's device (auto, cpu, cuda); read by "
              "frame.device() on every page")
SEED = _key("seed", "int", "app.py", "the sidebar's seed; read by frame.seed() on every page")
HANDOFF = _key("_handoff", "tuple[str, dict]", "pages/_ui/frame.py",
               "open_page's (target page, its controls' values), applied once by the target's "
               "receive_values")
LINK_RUN = _key("_link_run", "controls._LinkRun", "pages/_ui/controls.py",
                "this run's link notice place and the URL values seen so far")
LINK_NOTICE = _key("_link_notice", "controls._LinkNotice", "pages/_ui/controls.py",
                   "the link values a page could not use, said until the page changes")
SESSION_TOKEN = _key("session_token", "session._SessionToken", "pages/_ui/session.py",
                     "the token whose collection stops this session's background work")
MEASURED = _key("measured:", "dict[tuple, timing.Measurement]", "pages/_ui/timing.py",
                "family: a measurement kind's timings taken in the background, by setting")


def measured(kind: str) -> str:
    """The key of the timings of measurement ``kind`` (``MEASURED``)."""
    return f"{MEASURED}{kind}"


CELL_I = _key("cell_i", "int", "pages/_ui/cell_picker.py",
               "the followed cell's row; set by a click on the matrix")
CELL_J = _key("cell_j", "int", "pages/_ui/cell_picker.py",
               "the followed cell's column; set by a click on the matrix")
CELL_OPEN = _key("cell_open", "bool", "pages/decomposition.py",
                 "whether the one-cell section is open; set by a link naming a cell")

# -- checkpoints: choosing, uploading ----------------------------------------------------------
CHECKPOINT = _key("checkpoint", "str", "pages/_ui/checkpoints.py",
                  "the open checkpoint's key (the select box of Inspect, Compress and "
                  "Decomposition); written by an upload, an import, a plan loaded from the "
                  "search and a handoff")
UPLOADS = _key("uploads", "uploads.SessionUploads", "pages/_ui/checkpoints.py",
               "this session's uploaded checkpoints")
LAST_UPLOAD = _key("last_upload", "str", "pages/inspect/checkpoint_upload.py",
                   "the file id of the upload last read, so a rerun does not read it again")
UPLOAD_ERROR = _key("upload_error", "str", "pages/inspect/checkpoint_upload.py",
                    "why the last upload was refused, said while its file stays chosen")
IMPORT_ERROR = _key("import_error", "tuple[str, str]", "pages/inspect/foreign_upload.py",
                    "(file id, why) of a foreign model that could not be imported")
WATCHED_SWEEPS = _key("_length_sweeps", "dict[str, object]", "pages/_ui/checkpoint_views.py",
                      "this session's length sweep per checkpoint digest: its polls wait on "
                      "that one, and one stopped at its time limit (not kept by the memo) "
                      "stays until retry_length_sweep")

# -- Inspect -----------------------------------------------------------------------------------
INSPECT_OPENED = _key("_inspect_opened", "str", "pages/inspect.py",
                      "the checkpoint the atlas settings were last opened for")
ATLAS_N = _key("atlas_n", "int", "pages/inspect/kernel_atlas.py",
               "the atlas's length n; set by Inspect to a new checkpoint's training length")
ATLAS_BAND = _key("atlas_band", "int", "pages/inspect/kernel_atlas.py",
                  "the atlas's band m; set by Inspect to a new SKI checkpoint's own")
ATLAS_RANK = _key("atlas_rank", "int", "pages/inspect/kernel_atlas.py",
                  "the atlas's rank r; set by Inspect for a new checkpoint")
ATLAS_PICKED = _key("_atlas_picked", "list[int]", "pages/inspect/kernel_atlas.py",
                    "the atlas table's selected rows, so a new pick is told from the last")
ABLATION_JOB = _key("band_ablation_job", "tuple", "pages/inspect/kernel_atlas.py",
                    "the band ablation running in the background, with its setting")
KERNELS_N = _key("kernels_n", "int", "pages/inspect/header.py",
                 "the length of the kernels to download; set by Inspect to the training "
                 "length")
LAYER = _key("layer", "int", "pages/inspect/channel_drill.py",
             "the drilled layer (Inspect) or the learned channel's layer (Decomposition); "
             "set by a pick in the atlas and by a handoff")
CHANNEL = _key("channel", "int", "pages/inspect/channel_drill.py",
               "the drilled channel (Inspect) or the kernel's channel (Decomposition); set by "
               "a pick in the atlas and by a handoff")
COMPARE_WITH = _key("compare_with", "str", "pages/inspect/run_comparison.py",
                    "the run shown beside the open checkpoint")
COMPARE_AXIS = _key("compare_axis", "str", "pages/inspect/run_comparison.py",
                    "the axis the two runs are compared along")
WRITINGS = _key("inspect_writings", "dict[str, TextWriting]", "pages/inspect/text_writing.py",
                "this session's text writings, by checkpoint key (the newest few)")
WRITE_REFUSED = _key("write_refused", "str", "pages/inspect/text_writing.py",
                     "why the last Generate wrote nothing (its callback to the section)")

# -- Compress ----------------------------------------------------------------------------------
BAND = _key("band", "int", "pages/compress.py",
            "every layer's band m; set by a plan loaded from the search and by a handoff")
RANK = _key("rank", "int", "pages/compress.py",
            "every layer's rank r; set by a plan loaded from the search")
METHOD = _key("method", "str", "pages/compress.py",
              "the low-rank A (sample or fit) of Compress's plan and of Decomposition; set by "
              "a plan loaded from the search")
PER_LAYER = _key("per_layer", "bool", "pages/compress.py",
                 "whether each layer has its own plan; set by a plan loaded from the search")
COMPRESS_FORM = _key("compress_form", "str", "pages/compress.py",
                     "band + low rank or recurrent, for every layer")
COMPRESS_STATE = _key("compress_state", "int", "pages/compress.py",
                      "the recurrence's modes s, for every layer")
LAYER_PLAN = _key("layer_", "int | str", "pages/compress.py",
                  "family: layer i's band, rank, method or state in the per-layer table; set "
                  "by a plan loaded from the search")


def layer_plan(field: str, i: int) -> str:
    """The key of layer ``i``'s ``field`` (band, rank, method, state) (``LAYER_PLAN``)."""
    return f"{LAYER_PLAN}{field}_{i}"


COMPRESS_JOB = _key("compress_job", "BackgroundJob", "pages/compress.py",
                    "the conversion running or last run")
COMPRESS_JOB_ABOUT = _key("compress_job_about", "dict", "pages/compress.py",
                          "the conversion's source key and fine-tuning steps")
COMPRESS_SEARCH = _key("compress_search", "BackgroundJob", "pages/compress.py",
                       "the plan search running or last run; read by its results' section")
COMPRESS_SEARCH_KEY = _key("compress_search_key", "str", "pages/compress.py",
                           "the checkpoint the search ran on; a loaded plan opens it")
PARETO_CHART = _key("chart-pareto", "plotly selection", "pages/compress/plan_search.py",
                    "the search chart's selection; read by its on_select callback (Speed's "
                    "error-against-speed chart, on its own page, has the same key)")

# -- Speed -------------------------------------------------------------------------------------
BENCH_RESULTS = _key("bench_results", "dict[str, list[dict]]", "pages/speed.py",
                     "the sweeps' records by setting, kept for the session")
BENCH_JOB = _key("bench_job", "BackgroundJob", "pages/speed.py", "the sweep running")
BENCH_JOB_KEY = _key("bench_job_key", "str", "pages/speed.py",
                     "the setting of the sweep running, under which its records are kept")
PARETO_JOB = _key("pareto_job", "BackgroundJob", "pages/speed.py",
                  "the error-against-speed timing running")
PARETO = _key("pareto", "speed.ParetoView", "pages/speed.py",
              "the last error-against-speed result")
BAND_JOB = _key("band_job", "BackgroundJob", "pages/speed.py",
                "the band-crossover timing running")
BAND_CROSS = _key("band_cross", "speed.BandView", "pages/speed.py",
                  "the last band-crossover result")

# -- Train -------------------------------------------------------------------------------------
TRAIN_RUN = _key("train_run", "BackgroundRun", "pages/train.py", "the run this session shows")
TRAIN_RUN_ID = _key("train_run_id", "str", "pages/train.py", "its id (its autosave's name)")
TRAIN_OWNER_KEY = _key("train_owner_key", "str | None", "pages/train.py",
                       "the key that lets this session control it; None: it only watches")
TRAIN_FORM = _key("train_form", "dict", "pages/train.py",
                  "the form's values the run was started with, shown again after a visit "
                  "elsewhere")
TRAIN_REFUSAL = _key("train_refusal", "Exception", "pages/train.py",
                     "why the last Start or Resume started nothing (from a callback)")

# -- Lessons -----------------------------------------------------------------------------------
LESSON = _key("lesson", "str", "pages/lessons.py",
              "the lesson's title; set by Back and Next past a lesson's ends")
STEP = _key("step", "int", "pages/lessons.py", "the step's number; set by Back and Next")
PRESENT = _key("present", "bool", "pages/lessons.py", "presenter mode")
REVEALED = _key("revealed:", "bool", "pages/lessons.py",
                "family: whether a step's answer is revealed; read by its figures "
                "(pages/lessons/steps.py) to draw a measurement only then")
PREDICTION = _key("prediction:", "object", "pages/lessons.py",
                  "family: a step's prediction or sketch, kept beyond its widget")


def revealed(step: str) -> str:
    """The key of step ``step``'s reveal ("SLUG:NUMBER") (``REVEALED``)."""
    return f"{REVEALED}{step}"


def prediction(step: str) -> str:
    """The key of step ``step``'s kept prediction ("SLUG:NUMBER") (``PREDICTION``)."""
    return f"{PREDICTION}{step}"
