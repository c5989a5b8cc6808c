"""One conversion of result values (numpy scalars, NaN, NA, timestamps, tuples) to plain JSON values."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["jsonable", "jsonable_rows"]


def jsonable(value: Any) -> Any:
    """``value`` as JSON-ready data: NaN/NA → None, numpy scalars → Python, timestamps → ISO text, others → str."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if _is_missing(value):
        return None
    isoformat = getattr(value, "isoformat", None)
    if callable(isoformat):
        return isoformat()
    item = getattr(value, "item", None)
    if callable(item):
        try:
            return jsonable(item())
        except (TypeError, ValueError):
            pass
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return jsonable(tolist())
    return str(value)


def jsonable_rows(frame: Any) -> list[dict[str, Any]]:
    """A DataFrame's rows as JSON-ready dicts (column names as text); ``None`` gives ``[]``."""
    if frame is None:
        return []
    columns = [str(c) for c in frame.columns]
    return [{c: jsonable(v) for c, v in zip(columns, row)} for row in frame.itertuples(index=False)]


def _is_missing(value: Any) -> bool:
    try:
        import pandas as pd

        return bool(pd.isna(value))
    except (TypeError, ValueError, ImportError):
        return False
