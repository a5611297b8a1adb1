"""The colour schemes: every colour the UI uses, dark and light, as data.

``Scheme`` names each colour role once (its field names are what
``theme.MUTED`` and the other module attributes of ui/qt/theme.py read); ``DARK``
and ``LIGHT`` fill them. Process colours come from Okabe & Ito's palette:
black and yellow are left out of both schemes -- black vanishes on the dark
plot and is the light scheme's total-used curve, yellow vanishes on white and
is hard to tell from the dark scheme's white total-used curve -- and the six
left are ordered so the best contrast comes first. Which scheme is active, and
switching it live, is ui/qt/theme.py's; no Qt here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from vramscope.core.settings.view_options import Theme

# Okabe & Ito (2008), "Color Universal Design".
OKABE_ITO = {
    "orange": "#E69F00",
    "sky blue": "#56B4E9",
    "bluish green": "#009E73",
    "yellow": "#F0E442",
    "reddish purple": "#CC79A7",
    "vermillion": "#D55E00",
    "blue": "#0072B2",
    "black": "#000000",
}
_DARK_PROCESS = ("orange", "sky blue", "bluish green", "reddish purple", "vermillion", "blue")
# On white the strongest first: most workstations show one to four processes.
_LIGHT_PROCESS = ("blue", "vermillion", "bluish green", "reddish purple", "sky blue", "orange")


@dataclass(frozen=True)
class Scheme:
    """Every colour the UI uses, for one scheme. Field names are the module constants'."""

    name: str
    PLOT_BACKGROUND: str
    PLOT_FOREGROUND: str
    TOTAL_USED: str
    CAPACITY: str
    WARNING: str
    ERROR: str
    OK: str
    MUTED: str
    CARD_BACKGROUND: str
    CARD_BORDER: str
    DEMO_BANNER: str
    WINDOW: str
    BASE: str
    ALT_BASE: str
    TEXT: str
    HIGHLIGHT: str
    BUTTON: str
    LINK: str
    MID: str
    DARK: str
    LIGHT: str
    MIDLIGHT: str
    SHADOW: str
    TRACK: str  # the empty part of a progress bar
    PROCESS_COLOURS: tuple[str, ...]
    # the agent panel's buckets, in BUCKET order (weights, gradients, optimizer state,
    # activations + temporaries, cached free, outside PyTorch): Paul Tol's "muted"
    # colour-blind-safe scheme (Tol 2021, SRON/EPS/TN/09-002), so no bucket looks
    # like a process of the Okabe-Ito palette
    BUCKET_COLOURS: tuple[str, ...] = ()

    def colours(self) -> dict[str, str]:
        """Role -> colour, for every single-colour role."""
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name != "name" and isinstance(getattr(self, f.name), str)
        }


DARK = Scheme(
    name="dark",
    PLOT_BACKGROUND="#15181d",
    PLOT_FOREGROUND="#b8bec8",
    TOTAL_USED="#f2f2f2",
    CAPACITY="#ff6b6b",
    WARNING="#f0a030",
    ERROR="#ff5c5c",
    OK="#3fb68b",
    MUTED="#8b93a1",
    CARD_BACKGROUND="#20242b",
    CARD_BORDER="#323844",
    DEMO_BANNER="#6b4e00",
    WINDOW="#1b1e23",
    BASE="#15181d",
    ALT_BASE="#1d2127",
    TEXT="#e3e6eb",
    HIGHLIGHT="#2f6fb3",
    BUTTON="#262a31",
    LINK="#6cb4ff",
    MID="#2a2f37",
    DARK="#101215",
    LIGHT="#3a404b",
    MIDLIGHT="#30353e",
    SHADOW="#08090b",
    TRACK="#2c313a",
    PROCESS_COLOURS=tuple(OKABE_ITO[n] for n in _DARK_PROCESS),
    BUCKET_COLOURS=("#88CCEE", "#44AA99", "#DDCC77", "#CC6677", "#6F7785", "#AA4499"),
)

# Text colours reach at least 4.5:1 on their backgrounds (WCAG AA) -- the
# light scheme's warning/error/ok are darker than the dark scheme's for that.
LIGHT = Scheme(
    name="light",
    PLOT_BACKGROUND="#ffffff",
    PLOT_FOREGROUND="#3d4451",
    TOTAL_USED="#1f2329",
    CAPACITY="#d62828",
    WARNING="#9a5b00",
    ERROR="#c01f1f",
    OK="#12734f",
    MUTED="#5c6370",
    CARD_BACKGROUND="#f5f6f8",
    CARD_BORDER="#cfd4db",
    DEMO_BANNER="#6b4e00",
    WINDOW="#eceef1",
    BASE="#ffffff",
    ALT_BASE="#f4f5f7",
    TEXT="#1c1f24",
    HIGHLIGHT="#2f6fb3",
    BUTTON="#e3e6ea",
    LINK="#0b5cad",
    MID="#b9bec6",
    DARK="#8e949d",
    LIGHT="#fbfbfc",
    MIDLIGHT="#f6f7f9",
    SHADOW="#5a5f66",
    TRACK="#dde1e6",
    PROCESS_COLOURS=tuple(OKABE_ITO[n] for n in _LIGHT_PROCESS),
    BUCKET_COLOURS=("#332288", "#117733", "#999933", "#CC6677", "#A0A6B0", "#882255"),
)

SCHEMES = {Theme.DARK: DARK, Theme.LIGHT: LIGHT}
ROLES = frozenset(f.name for f in dataclasses.fields(Scheme)) - {"name"}
