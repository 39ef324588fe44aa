"""Model loading, where the README's quickstart imports it: :mod:`dotjson.tools.models`.

``from dotjson.models import converted_model_dir`` (and ``load_model``, ``load_tokenizer``, ...)
keeps working; the code lives with the rest of the tooling in :mod:`dotjson.tools`.
"""

from dotjson.tools.models import *  # noqa: F401,F403
from dotjson.tools.models import __all__  # noqa: F401
