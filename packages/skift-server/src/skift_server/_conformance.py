"""Both implementations offer the whole :class:`skift.Skift` protocol: pyright checks this module.

Nothing imports it at run time. An operation added to ``skift.OPERATIONS`` regenerates the
protocol (``packages/skift-core/tools/gen_surface.py``); until RemoteSkift has the method with
LocalSkift's signature, pyright fails here.
"""

from __future__ import annotations

import skift

from ._client import RemoteSkift


def local(sk: skift.LocalSkift) -> skift.Skift:
    return sk


def remote(sk: RemoteSkift) -> skift.Skift:
    return sk
