"""Identity providers' discovery documents as they publish them (fixtures/providers/, see its
README): every field in the provider's own shape, with its hosts and tenant, realm or pool ids
as `${NAME}` placeholders that a test fills with the URL of its site on 127.0.0.1."""
import json
import pathlib
import string

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "providers"


def published(name, **fill):
    """The document fixtures/providers/NAME.json with its placeholders filled; a placeholder
    left unfilled is an error (KeyError), never a document with `${…}` in it."""
    return json.loads(string.Template((FIXTURES / f"{name}.json").read_text()).substitute(fill))
