"""The course GPT (course.models.gpt): its rules, equality with `transformers`' GPT2LMHeadModel,
the KV cache, generation, and the parameter and FLOP counts of GPT-1, GPT-2 and GPT-3."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from types import SimpleNamespace

import pytest
import torch
from torch.nn import functional as F

from course.analysis.parameters import (
    GPTCount,
    count_gpt,
    forward_flops,
    generation_flops,
    kv_cache_size,
    training_flops,
)
from course.decoding import beam_search, greedy_search
from course.models.gpt import (
    GPT,
    GPT1,
    GPT2_LARGE,
    GPT2_MEDIUM,
    GPT2_SMALL,
    GPT2_XL,
    GPT3,
    GPTConfig,
    block_with_cache,
    load_gpt2_state_dict,
    load_openai_gpt_state_dict,
    save_for_transformers,
    to_gpt2_state_dict,
)
from course.models.transformer import EncoderLayer, gelu_tanh
from course.train import fit
from tests.messages import raises

pytestmark = pytest.mark.usefixtures("one_thread")
SMALL = GPTConfig(vocab_size=50, max_len=24, d_model=32, num_layers=2, num_heads=4, d_ff=48)
POST_NORM = GPTConfig(vocab_size=50, max_len=24, d_model=32, num_layers=2, num_heads=4,
                      d_ff=48, norm_first=False)  # fmt: skip


def perturbed(config: GPTConfig = SMALL, seed: int = 0) -> GPT:
    """A float64 model in eval mode whose biases and LayerNorms are not at 0 and 1."""
    torch.manual_seed(seed)
    model = GPT(config).double().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return model


def ids(B: int = 3, T: int = 10, seed: int = 1, vocab: int = 50) -> torch.Tensor:
    return torch.randint(vocab, (B, T), generator=torch.Generator().manual_seed(seed))


def test_forward_follows_the_rules_and_ties_the_output_layer():
    model = perturbed()
    x = ids()
    logits = model(x)
    assert logits.shape == (3, 10, 50) and logits.dtype == torch.float64
    assert model.lm_head.weight is model.token.weight  # tied
    h = model.token(x) + model.position.weight[:10]  # (GPT-1)
    for block in model.blocks:
        assert isinstance(block, EncoderLayer) and block.norm_first
        assert block.ffn.activation == "gelu_tanh"
        a = h + block.self_attn(block.norm1(h), mask=torch.ones(10, 10).tril().bool())[0]
        h = a + block.ffn(block.norm2(a))  # (GPT-2)
    expected = model.final_norm(h) @ model.token.weight.T  # (GPT-3): no bias
    torch.testing.assert_close(logits, expected)


@pytest.mark.parametrize("config", [SMALL, POST_NORM], ids=["pre-norm", "post-norm"])
def test_a_position_never_sees_the_future(config):
    model = perturbed(config)
    x = ids()
    other = x.clone()
    other[:, 6:] = (other[:, 6:] + 1) % 50
    torch.testing.assert_close(model(other)[:, :6], model(x)[:, :6])
    assert not torch.allclose(model(other)[:, 6:], model(x)[:, 6:])


def test_gelu_tanh_is_the_tanh_formula_and_gpt2s_gelu_new():
    from transformers.activations import NewGELUActivation

    x = torch.linspace(-6, 6, 101, dtype=torch.float64)
    formula = 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    assert (gelu_tanh(x) - formula).abs().max().item() < 1e-15
    assert (gelu_tanh(x) - NewGELUActivation()(x)).abs().max().item() < 1e-15
    assert (gelu_tanh(x) - F.gelu(x)).abs().max().item() > 1e-4  # not the exact GELU


def test_config_and_input_errors_are_clear():
    model = GPT(SMALL)
    with pytest.raises(ValueError, match="divisible by num_heads"):
        GPTConfig(d_model=30, num_heads=4)
    with pytest.raises(ValueError, match="sizes must be positive"):
        GPTConfig(num_layers=0)
    with pytest.raises(ValueError, match="activation"):
        GPTConfig(activation="swish")
    with pytest.raises(ValueError, match="dropout"):
        GPTConfig(dropout=1.0)
    with pytest.raises(TypeError, match="ids: expected a signed integer"):
        model(ids().float())
    with pytest.raises(ValueError, match=r"ids: expected values in \[0, 50\)"):
        model(ids() + 50)
    with pytest.raises(ValueError, match="ids: expected 2 dimensions"):
        model(ids()[0])
    with pytest.raises(ValueError, match="max_len=24"):
        model(ids(T=25))
    with pytest.raises(ValueError, match="norm_first=False"):
        POST_NORM.to_transformers()


# ----------------------------------------------------------------------------------------------
# Equality with transformers' GPT2LMHeadModel


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_gpt2_lm_head_model_loads_our_weights_and_agrees(tmp_path, dtype):
    from transformers import GPT2LMHeadModel

    model = perturbed().to(dtype)
    folder = save_for_transformers(model, tmp_path / "gpt")
    config = json.loads((folder / "config.json").read_text())
    assert config["activation_function"] == "gelu_new" and config["n_inner"] == 48
    assert json.loads((folder / "course_gpt.json").read_text())["d_model"] == 32
    theirs, info = GPT2LMHeadModel.from_pretrained(
        folder, local_files_only=True, output_loading_info=True, dtype=dtype
    )
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    assert not info["mismatched_keys"], info
    assert theirs.lm_head.weight.data_ptr() == theirs.transformer.wte.weight.data_ptr()
    x = ids()
    with torch.no_grad():
        expected = theirs.eval()(input_ids=x).logits
    diff = (model(x) - expected).abs().max().item()
    assert diff < (1e-12 if dtype == torch.float64 else 1e-5), diff
    with torch.no_grad():  # not vacuous: one changed weight is seen
        model.blocks[1].ffn.linear1.bias[0] += 0.01
    assert (model(x) - expected).abs().max().item() > 1e-5


def test_sampling_draws_the_tokens_of_transformers_generate(tmp_path):
    """Same weights, same filters, same global seed: GPT2LMHeadModel.generate(do_sample=True)
    and our generate draw the same tokens (both call torch.multinomial once per step)."""
    from transformers import GPT2LMHeadModel

    model = perturbed(GPTConfig(vocab_size=50, max_len=40, d_model=32, num_layers=2,
                                num_heads=4, d_ff=48))  # fmt: skip
    folder = save_for_transformers(model, tmp_path / "gpt")
    theirs = GPT2LMHeadModel.from_pretrained(folder, local_files_only=True, dtype=torch.float64)
    prompt = ids(T=5, seed=2)
    for settings in [{"temperature": 0.8, "top_k": 10, "top_p": 0.9}, {"top_p": 0.5}]:
        torch.manual_seed(123)
        expected = theirs.eval().generate(
            prompt, attention_mask=torch.ones_like(prompt), do_sample=True, max_new_tokens=15,
            pad_token_id=0, **{"top_k": 0, **settings},
        )  # fmt: skip
        torch.manual_seed(123)
        got = model.generate(prompt, 15, **settings)
        assert torch.equal(got, expected), settings
    torch.manual_seed(124)  # not vacuous: another seed draws other tokens
    assert not torch.equal(model.generate(prompt, 15, top_p=0.5), expected)


def test_our_model_reads_gpt2_weights_and_agrees():
    from transformers import GPT2LMHeadModel

    torch.manual_seed(3)
    theirs = GPT2LMHeadModel(SMALL.to_transformers()).double().eval()
    with torch.no_grad():
        for p in theirs.parameters():
            p.add_(0.1 * torch.randn_like(p))
    ours = load_gpt2_state_dict(GPT(SMALL).double().eval(), theirs.state_dict())
    x = ids(seed=4)
    with torch.no_grad():
        diff = (ours(x) - theirs(input_ids=x).logits).abs().max().item()
    assert diff < 1e-12, diff
    # And back: our GPT-2 state dict is theirs, tensor for tensor.
    back = to_gpt2_state_dict(ours)
    for name, tensor in theirs.state_dict().items():
        if name in back:
            assert torch.equal(back[name], tensor), name
    assert set(back) <= set(theirs.state_dict())


def test_post_norm_model_reads_gpt1_weights_and_agrees():
    from transformers import OpenAIGPTConfig, OpenAIGPTLMHeadModel

    config = OpenAIGPTConfig(vocab_size=50, n_positions=24, n_embd=32, n_layer=2, n_head=4)
    torch.manual_seed(5)
    theirs = OpenAIGPTLMHeadModel(config).double().eval()  # afn "gelu" is the tanh form there
    with torch.no_grad():
        for p in theirs.parameters():
            p.add_(0.1 * torch.randn_like(p))
    post = GPTConfig(vocab_size=50, max_len=24, d_model=32, num_layers=2, num_heads=4,
                     d_ff=128, norm_first=False)  # fmt: skip
    ours = load_openai_gpt_state_dict(GPT(post).double().eval(), theirs.state_dict())
    x = ids(seed=6)
    with torch.no_grad():
        diff = (ours(x) - theirs(input_ids=x).logits).abs().max().item()
    assert diff < 1e-12, diff
    with pytest.raises(ValueError, match="GPT-1 is post-norm"):
        load_openai_gpt_state_dict(GPT(SMALL), theirs.state_dict())
    partial = {k: v for k, v in theirs.state_dict().items() if "positions_embed" not in k}
    with raises(ValueError, "missing 1", "positions_embed"):
        load_openai_gpt_state_dict(GPT(post), partial)


def test_gpt2_layout_errors():
    model = GPT(SMALL)
    state = to_gpt2_state_dict(model)
    with pytest.raises(TypeError, match="expected a GPT"):
        to_gpt2_state_dict(EncoderLayer(8, 2, 16))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="norm_first=False"):
        to_gpt2_state_dict(GPT(POST_NORM))
    with pytest.raises(ValueError, match="missing 1 tensors"):
        load_gpt2_state_dict(model, {k: v for k, v in state.items() if "h.1.ln_2.bias" not in k})
    wrong = {
        **state,
        "transformer.h.0.attn.c_attn.weight": state["transformer.h.0.attn.c_attn.weight"].T,
    }
    with pytest.raises(ValueError, match=r"c_attn.weight'\]: expected shape \(32, 96\)"):
        load_gpt2_state_dict(model, wrong)


# ----------------------------------------------------------------------------------------------
# The KV cache


@pytest.mark.parametrize("config", [SMALL, POST_NORM], ids=["pre-norm", "post-norm"])
def test_cached_chunks_give_the_logits_of_the_whole_sequence(config):
    model = perturbed(config)
    x = ids(T=12)
    whole = model(x)
    past, pieces = None, []
    for a, b in [(0, 5), (5, 6), (6, 7), (7, 12)]:
        logits, past = model.forward_with_cache(x[:, a:b], past)
        pieces.append(logits)
    diff = (torch.cat(pieces, 1) - whole).abs().max().item()
    assert diff < 1e-12, diff
    assert len(past) == config.num_layers and past[0][0].shape == (3, 4, 12, 8)
    h = model.embed(x)
    out, (k, v) = block_with_cache(model.blocks[0], h, None)
    torch.testing.assert_close(out, model.blocks[0](h, torch.ones(12, 12).tril().bool()))
    assert k.shape == v.shape == (3, 4, 12, 8)


def test_cached_and_uncached_generation_give_the_same_tokens_and_log_probs():
    model = perturbed()
    prompt = ids(B=2, T=4)
    out = {}
    for use_cache in (True, False):
        g = torch.Generator().manual_seed(7)
        out[use_cache] = model.generate(prompt, 12, top_k=10, generator=g, use_cache=use_cache)
    assert out[True].shape == (2, 16) and torch.equal(out[True][:, :4], prompt)
    assert torch.equal(out[True], out[False])
    # Step by step, the two states give the same log-probabilities.
    cached, plain = model.start(2, use_cache=True), model.start(2, use_cache=False)
    for t in range(15):
        a, cached = model.decode_step(out[True][:, t], cached)
        b, plain = model.decode_step(out[True][:, t], plain)
        assert (a - b).abs().max().item() < 1e-12
    assert cached["past"][0][0].shape[2] == 15 and plain["prefix"].shape == (2, 15)
    held = sum(k.numel() + v.numel() for k, v in cached["past"])
    assert held == kv_cache_size(SMALL, 15, batch_size=2)
    assert kv_cache_size(GPT3, 2048) * 2 == pytest.approx(9.66e9, rel=0.01)  # float16 bytes
    with pytest.raises(ValueError, match="seq_len >= 0"):
        kv_cache_size(SMALL, -1)


def test_greedy_and_beam_search_run_on_the_cache():
    model = perturbed(seed=2)
    results = {}
    for use_cache in (True, False):
        greedy = greedy_search(model.decode_step, model.start(2, use_cache), batch_size=2,
                               bos=1, eos=0, max_len=10)  # fmt: skip
        beam = beam_search(model.decode_step, model.start(2, use_cache), batch_size=2,
                           bos=1, eos=0, beam_size=3, max_len=10)  # fmt: skip
        results[use_cache] = (greedy, beam)
    for a, b in zip(*results.values(), strict=True):  # beams reorder the cache's rows
        assert [h.tokens for h in a] == [h.tokens for h in b]
        assert all(abs(x.score - y.score) < 1e-9 for x, y in zip(a, b, strict=True))


def test_cache_and_generation_errors_are_clear():
    model = perturbed()
    _, past = model.forward_with_cache(ids(T=3))
    with pytest.raises(ValueError, match="past: expected a tuple of 2"):
        model.forward_with_cache(ids(T=1), past[:1])
    with raises(ValueError, r"past\[0\] K", r"\(2, 4, 3, 8\)", r"\(3, 4, 3, 8\)"):
        model.forward_with_cache(ids(B=2, T=1), past)
    with pytest.raises(ValueError, match="max_len=24 positions, got 25"):
        model.forward_with_cache(ids(T=22), past)
    with raises(TypeError, r"past\[0\] K", "float64", "float32"):
        model.forward_with_cache(ids(T=1), tuple((k.float(), v.float()) for k, v in past))
    with pytest.raises(ValueError, match="need 25 positions"):
        model.generate(ids(T=5), 21)
    with pytest.raises(ValueError, match="temperature"):
        model.generate(ids(T=5), 3, temperature=0)
    with pytest.raises(ValueError, match="top_p|p: expected"):
        model.generate(ids(T=5), 3, top_p=1.5)
    assert model.generate(ids(T=5), 0).shape == (3, 5)


def test_loss_is_cross_entropy_and_a_tiny_gpt_learns_a_pattern():
    torch.manual_seed(0)
    config = GPTConfig(vocab_size=8, max_len=16, d_model=32, num_layers=1, num_heads=2,
                       d_ff=64, dropout=0.0)  # fmt: skip
    model = GPT(config)
    pattern = torch.tensor([1, 2, 3, 4, 5, 6, 7] * 3)[:17]
    x, y = pattern[None, :-1].repeat(4, 1), pattern[None, 1:].repeat(4, 1)
    first = model.loss((x, y)).item()
    assert abs(first - F.cross_entropy(model(x).flatten(0, 1), y.flatten()).item()) < 1e-6
    assert abs(first - math.log(8)) < 0.3  # near uniform at the start
    history = fit(model, GPT.loss, [(x, y)] * 60, steps=60, lr=1e-2, progress=False)
    assert history.losses[-1] < 0.1 * first
    out = model.generate(pattern[None, :3], 6, top_k=1)  # top-1 sampling: greedy
    assert out[0].tolist() == pattern[:9].tolist()


def test_initialisation_is_gpt2s():
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=2000, d_model=64, num_layers=4, num_heads=2, d_ff=256))
    assert abs(model.token.weight.std().item() - 0.02) < 0.001
    assert abs(model.blocks[0].ffn.linear1.weight.std().item() - 0.02) < 0.001
    scaled = 0.02 / math.sqrt(8)
    assert abs(model.blocks[0].ffn.linear2.weight.std().item() - scaled) < 0.0007
    assert abs(model.blocks[0].self_attn.W_o.weight.std().item() - scaled) < 0.0007
    assert not model.blocks[0].self_attn.W_q.bias.any()


# ----------------------------------------------------------------------------------------------
# Scale: parameter counts and FLOPs


@pytest.mark.parametrize("config", [SMALL, POST_NORM], ids=["pre-norm", "post-norm"])
def test_count_formula_matches_the_model_and_gpt2(config):
    model = GPT(config)
    count = count_gpt(config)
    assert isinstance(count, GPTCount)
    assert count.total == sum(p.numel() for p in model.parameters())
    assert count.layers == sum(p.numel() for p in model.blocks.parameters())
    assert count.final_norm == (64 if config.norm_first else 0)
    assert count.non_embedding == count.total - (50 + 24) * 32
    if config.norm_first:
        from transformers import GPT2LMHeadModel

        theirs = GPT2LMHeadModel(config.to_transformers())
        assert count.total == sum(p.numel() for p in theirs.parameters())
    with pytest.raises(ValueError, match="sizes must be positive"):
        count_gpt(SimpleNamespace(**{**asdict(config), "d_ff": 0}))  # type: ignore[arg-type]


PUBLISHED = [  # config, our exact count, published figure
    (GPT1, 116_534_784, 117e6),
    (GPT2_SMALL, 124_439_808, 124e6),
    (GPT2_MEDIUM, 354_823_168, 355e6),
    (GPT2_LARGE, 774_030_080, 774e6),
    (GPT2_XL, 1_557_611_200, 1.5e9),
    (GPT3, 174_604_259_328, 175e9),
]


@pytest.mark.parametrize(("config", "exact", "published"), PUBLISHED,
                         ids=["GPT-1", "GPT-2", "GPT-2 medium", "GPT-2 large", "GPT-2 XL",
                              "GPT-3"])  # fmt: skip
def test_published_sizes_on_the_meta_device(config, exact, published):
    with torch.device("meta"):
        model = GPT(config)  # shapes without memory: GPT-3 would need 700 GB in float32
    assert model.token.weight.is_meta
    count = sum(p.numel() for p in model.parameters())
    assert count == count_gpt(config).total == exact
    assert abs(count - published) / published < 0.04


def test_transformers_counts_gpt1_and_gpt2_the_same_way():
    from transformers import GPT2LMHeadModel, OpenAIGPTConfig, OpenAIGPTLMHeadModel

    with torch.device("meta"):
        gpt2 = GPT2LMHeadModel(GPT2_SMALL.to_transformers())
        gpt1 = OpenAIGPTLMHeadModel(OpenAIGPTConfig())  # its defaults are GPT-1's sizes
    assert sum(p.numel() for p in gpt2.parameters()) == count_gpt(GPT2_SMALL).total
    assert sum(p.numel() for p in gpt1.parameters()) == count_gpt(GPT1).total


def test_forward_flops_count_every_matrix_product():
    from torch.utils.flop_counter import FlopCounterMode

    model = GPT(SMALL).eval()
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(ids(B=1, T=20))
    assert counter.get_total_flops() == forward_flops(SMALL, 20)
    # For GPT-3 over a full context, 2N per token is within 3% of the exact count.
    n = count_gpt(GPT3).total
    ratio = forward_flops(GPT3, 2048) / (generation_flops(n, 2048))
    assert 1.0 < ratio < 1.03, ratio
    assert training_flops(n, 300e9) == pytest.approx(3.14e23, rel=0.01)  # GPT-3's 300B tokens
    with pytest.raises(ValueError, match="seq_len"):
        forward_flops(SMALL, 0)
    with pytest.raises(ValueError, match="expected N >= 1"):
        training_flops(0, 10)
    with pytest.raises(ValueError, match="expected N >= 1"):
        generation_flops(10, -1)
