"""The Prolific commands refuse an unknown study by name, before any call to Prolific."""

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("command", ["publish_prolific", "sync_prolific", "pay_bonuses"])
def test_an_unknown_study_is_refused_with_its_id(command):
    with pytest.raises(CommandError, match="no study 987654"):
        call_command(
            command,
            "--study",
            "987654",
            *(["--site-url", "https://example.org"] if command == "publish_prolific" else []),
        )
