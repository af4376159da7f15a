"""The .pyi stubs name what the module has, and every binding carries a docstring."""
import ast
import inspect
import pathlib

import alto
import alto.datasets
import alto.features
import alto.models
import alto.tokenizers

STUBS = pathlib.Path(__file__).resolve().parents[2] / "bindings" / "alto-stubs"
MODULES = {"__init__": alto, "datasets": alto.datasets, "features": alto.features,
           "models": alto.models, "tokenizers": alto.tokenizers}
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


def init_defaults(path, cls_name):
    """The keyword-only parameters of a stub class's __init__ with their default values."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ClassDef) and node.name == cls_name:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    args = item.args
                    return {a.arg: ast.literal_eval(d) for a, d in zip(args.kwonlyargs, args.kw_defaults)}
    return None


def declared_value(text):
    """An option default as alto's schema prints it (true, 0.97, 'povey', None) as Python."""
    if text in ("true", "false"):
        return text == "true"
    if text == "None":
        return None
    if text.startswith("'"):
        return text[1:-1]
    return float(text)


def test_extractor_stubs_match_the_option_declarations():
    """Each extractor's stubbed keywords and defaults are its options' schema, field for field."""
    registry = alto.features.extractors()
    names = {"KaldiFbank": "kaldi-fbank", "KaldiMfcc": "kaldi-mfcc", "MelSpectrogram": "mel",
             "WhisperFeatureExtractor": "whisper", "SeamlessM4TFeatureExtractor": "seamless-m4t",
             "Wav2Vec2FeatureExtractor": "wav2vec2"}
    for cls_name, name in names.items():
        stub = init_defaults(STUBS / "features.pyi", cls_name)
        assert stub is not None, f"{cls_name}.__init__ has no keyword stub"
        declared = {k: declared_value(v) for k, v in registry[name]["options"].items()}
        assert list(stub) == list(declared), f"{cls_name}: stub and declaration differ in names"
        for key, value in declared.items():
            assert stub[key] == value, f"{cls_name}.{key}: stub {stub[key]!r}, declared {value!r}"
    # Stft reports hop_length and win_length resolved (0 stands for torch.stft's defaults).
    stft = init_defaults(STUBS / "features.pyi", "Stft")
    resolved = alto.features.Stft().options
    assert list(stft) == list(resolved)
    assert {k: v for k, v in stft.items() if k not in ("hop_length", "win_length")} == \
        {k: v for k, v in resolved.items() if k not in ("hop_length", "win_length")}
