"""`download` writes rows as JSON: an image column (TheoremQA's `Picture`) becomes whether the row
has a picture, since the harness shows models text alone and JSON cannot hold the image."""
import io

import datasets
import pytest

from path_eval.data.hub import text_rows


def test_an_image_column_becomes_whether_the_row_has_one():
    image = pytest.importorskip("PIL.Image")
    png = io.BytesIO()
    image.new("RGB", (2, 2)).save(png, format="PNG")
    features = datasets.Features({"Question": datasets.Value("string"), "Picture": datasets.Image()})
    pictures = [None, {"bytes": png.getvalue(), "path": None}]
    rows = datasets.Dataset.from_dict({"Question": ["a", "b"], "Picture": pictures}, features=features)
    assert list(text_rows(rows)) == [{"Question": "a", "Picture": False}, {"Question": "b", "Picture": True}]
    assert list(text_rows([{"x": 1}])) == [{"x": 1}]  # rows from an archive: as they are
