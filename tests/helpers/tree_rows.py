"""A tree's rows verified in one pass against the same nodes' one-token passes: the bitwise
check of every exact mode (the few-row kernel, one shape)."""
from __future__ import annotations

import torch

from logitspec.runtime.kvcache import new_cache


@torch.inference_mode()
def tree_rows_and_single_rows(model, prompt: list[int], root: int, branches: list[list[int]]):
    """Final hidden states [T, d] of a tree (root, then each branch under it) verified in one
    masked pass, and the same nodes' states from one-token passes along each branch."""
    from logitspec.core.loop import prefill
    from logitspec.core.tree import DraftTree
    from logitspec.core.verify import prepare_inputs

    def cache():
        c = new_cache(model.config, len(prompt) + 1 + max(map(len, branches)))
        prefill(model, c, prompt)
        return c

    tree = DraftTree(root)
    for branch in branches:
        tree.add_branch(0, branch, keep=len(branch), capacity=64, origin="g1", query=0)
    nodes = tree.finalize()
    rows = model.base_model(**prepare_inputs(model, nodes, len(prompt)), cache=cache(),
                            use_cache=True).last_hidden_state[0]
    one: dict[int, torch.Tensor] = {}
    for leaf in (n for n in nodes if all(m.parent != n.id for m in nodes)):
        c = cache()
        walk = [leaf.id]
        while nodes[walk[-1]].parent >= 0:
            walk.append(nodes[walk[-1]].parent)
        for i in reversed(walk):
            h = model.base_model(input_ids=torch.tensor([[nodes[i].token]]), cache=c, use_cache=True)
            one[i] = h.last_hidden_state[0, 0]
    return rows, torch.stack([one[i] for i in range(len(nodes))])
