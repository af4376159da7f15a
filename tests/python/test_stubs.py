"""The .pyi stubs name what the module has, and every binding carries a docstring."""
import ast
import inspect
import pathlib

import alto
import alto.features
import alto.models
import alto.tokenizers

STUBS = pathlib.Path(__file__).resolve().parents[2] / "bindings" / "alto-stubs"
MODULES = {"__init__": alto, "features": alto.features, "models": alto.models,
           "tokenizers": alto.tokenizers}
# Bound only when the library has the codecs (tokenizers/audio_tokenizer.cpp).
OPTIONAL = {"AudioTokenizer", "AudioTokenizerStream"}


def stub_names(path):
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            members = [n.name for n in node.body if isinstance(n, ast.FunctionDef)] \
                if isinstance(node, ast.ClassDef) else []
            yield node.name, members


def test_stubs_match_the_module():
    for stem, module in MODULES.items():
        for name, members in stub_names(STUBS / f"{stem}.pyi"):
            if name in OPTIONAL and not hasattr(module, name):
                continue
            assert hasattr(module, name), f"{module.__name__}.{name} is in the stub only"
            for member in members:
                assert hasattr(getattr(module, name), member), f"{name}.{member} is in the stub only"


def test_every_binding_is_in_a_stub_and_documented():
    for stem, module in MODULES.items():
        stubbed = {name for name, _ in stub_names(STUBS / f"{stem}.pyi")}
        for name, value in vars(module).items():
            if name.startswith("_") or inspect.ismodule(value):
                continue
            if stem == "__init__" and name in ("FeatureExtractor", "AudioTokenizer", "BpeTokenizer"):
                continue  # re-exported from the submodules
            assert name in stubbed, f"{module.__name__}.{name} has no stub"
            assert (value.__doc__ or "").strip(), f"{module.__name__}.{name} has no docstring"
            if inspect.isclass(value) and not issubclass(value, BaseException):
                for member_name, member in vars(value).items():
                    if member_name.startswith("_"):
                        continue
                    assert (getattr(member, "__doc__", None) or "").strip(), \
                        f"{module.__name__}.{name}.{member_name} has no docstring"
