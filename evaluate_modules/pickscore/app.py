"""The Hub Space of the `pickscore` evaluate module: the standard evaluate widget around this folder's module."""
from pathlib import Path

import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load(str(Path(__file__).resolve().parent))
launch_gradio_widget(module)
