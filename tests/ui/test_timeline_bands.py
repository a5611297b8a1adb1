"""A GPU's stacked bands are drawn through their corners: the outline a user
sees is the one every sample draws, with a few points where memory stays flat."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QColor, QImage, QPainter, QPainterPath, QTransform

from vramscope.ui.qt import pens
from vramscope.core.units import GiB
from vramscope.ui.timeline.timeline_stack import Band, shape_bands

from .frames import T0


def _series() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ten minutes at 1 s: a bottom layer flat with one step, a top layer flat,
    then a minute of noise (an eval), then flat again."""
    t = T0 + np.arange(600.0)
    bottom = np.where(np.arange(600) < 250, 2.0, 3.5)
    rng = np.random.default_rng(7)
    height = np.full(600, 4.0)
    height[400:460] += rng.uniform(0.0, 1.5, 60)
    return t, bottom, bottom + height


def _drawn(fill: QPainterPath, edge: QPainterPath, dash: int) -> QImage:
    image = QImage(820, 220, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(QColor("#101418"))
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    view = QTransform()
    view.translate(10, 210)
    view.scale(800 / 600.0, -200 / 10.0)
    view.translate(-T0, 0)
    painter.setTransform(view)
    painter.fillPath(fill, pens.brush("#4c9be8", dash, alpha=150))
    painter.strokePath(edge, pens.pen("#4c9be8", 1.2, dash))
    painter.end()
    return image


def test_a_band_draws_the_outline_of_every_sample_with_a_point_per_corner(qapp):
    t, bottom, top = _series()
    widget = pg.PlotWidget()  # (held: the bands' items live in its view)
    below, band = Band(widget.getPlotItem()), Band(widget.getPlotItem())
    shape_bands([below, band], t, np.vstack([bottom, top]) * GiB)
    # flat stretches are one segment: a handful of points outside the noisy minute
    assert band.edge.path().elementCount() <= 60 + 6
    assert band.fill.path().elementCount() <= 60 + 12
    every = pg.arrayToQPath(np.concatenate([t, t[::-1]]), np.concatenate([top, bottom[::-1]]), connect="all")
    every.closeSubpath()
    for dash in (0, 1):  # solid and hatched with a dashed edge
        assert _drawn(band.fill.path(), band.edge.path(), dash) == _drawn(
            every, pg.arrayToQPath(t, top, connect="all"), dash
        )


def test_a_flat_band_is_four_points(qapp):
    t = T0 + np.arange(600.0)
    widget = pg.PlotWidget()  # (held: the bands' items live in its view)
    below, band = Band(widget.getPlotItem()), Band(widget.getPlotItem())
    shape_bands([below, band], t, np.vstack([np.full(600, 1.0), np.full(600, 5.0)]) * GiB)
    assert band.fill.path().elementCount() == 4 + 1  # (and the closing point)
    assert band.edge.path().elementCount() == 2
    assert band.fill.path().boundingRect().getCoords() == (T0, 1.0, T0 + 599, 5.0)


def test_an_empty_band_draws_nothing(qapp):
    widget = pg.PlotWidget()  # (held: the band's items live in its view)
    band = Band(widget.getPlotItem())
    shape_bands([band], np.empty(0), np.zeros((1, 0)))
    assert band.edge.path().isEmpty()
    assert band.fill.path().elementCount() <= 1
