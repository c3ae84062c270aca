"""Forms of the researcher dashboard. They only check types; every rule is ``services``' (ValidationError)."""

from __future__ import annotations

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError

from tasks_data.registry import TASKS

from .models import Study
from .services import SHOT_CONDITIONS


def _shot_label(k: int) -> str:
    return "0 (description only)" if k == 0 else f"{k} shots"


class StudyForm(forms.Form):
    name = forms.CharField(max_length=200, help_text="For you; workers do not see it.")
    tasks = forms.MultipleChoiceField(
        choices=[(slug, spec.name) for slug, spec in TASKS.items()], widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "choose at least one task"},
    )
    shots = forms.TypedMultipleChoiceField(
        choices=[(k, _shot_label(k)) for k in SHOT_CONDITIONS], coerce=int, widget=forms.CheckboxSelectMultiple,
        initial=list(SHOT_CONDITIONS), error_messages={"required": "choose at least one shot condition"},
        help_text="One cohort of new workers per task and shot condition.",
    )
    chain = forms.IntegerField(min_value=1, max_value=5, initial=1,
                               help_text="Training files nest 10 in 20 in 30; a chain is named by its 10-shot split.")
    workers_per_cohort = forms.IntegerField(min_value=1, max_value=1000, initial=3,
                                            help_text="Workers who must finish the test step in each cohort.")
    pay_rate = forms.DecimalField(min_value=0, max_digits=7, decimal_places=2, initial=12,
                                  label="Pay rate (USD per hour)")
    filter_floor = forms.FloatField(required=False, min_value=0, max_value=1, label="Filter: floor",
                                    help_text="Filter a worker whose training S1 (0-1) is below this. Empty: off.")
    filter_fraction = forms.FloatField(required=False, min_value=0, max_value=1, initial=0.5,
                                       label="Filter: fraction of the others' mean",
                                       help_text="Filter a worker below this fraction of the mean training S1 of "
                                                 "the cohort's other workers. Empty: off.")
    platform = forms.ChoiceField(choices=Study.Platform.choices, initial=Study.Platform.PROLIFIC,
                                 widget=forms.RadioSelect)
    worker_id_param = forms.CharField(max_length=50, initial="worker_id", label="Worker-id parameter",
                                      help_text="Generic link only: the query parameter that carries the worker id.")
    completion_code = forms.CharField(max_length=50, required=False, help_text="Empty: one is generated.")
    screenout_code = forms.CharField(max_length=50, required=False, label="Screen-out code",
                                     help_text="Given to filtered workers (paid for the training). Empty: generated.")
    test_order = forms.ChoiceField(choices=Study.TestOrder.choices, initial=Study.TestOrder.FILE,
                                   widget=forms.RadioSelect)
    idle_cap_seconds = forms.IntegerField(min_value=1, initial=300, label="Idle cap (seconds)",
                                          help_text="A gap between answers counts at most this long for pay.")
    time_limit_minutes = forms.IntegerField(min_value=1, required=False, label="Time limit (minutes)",
                                            help_text="Older enrollments expire. Empty: 2 x the expected duration.")
    launch = forms.BooleanField(required=False, label="Launch every cohort now (the join links take workers at once)")
    expected_minutes = forms.IntegerField(min_value=1, initial=30, required=False, label="Expected duration (minutes)",
                                          help_text="The Prolific reward and the default time limit (twice it) follow.")
    worker_id_pattern = forms.CharField(max_length=200, required=False, label="Worker-id pattern",
                                        help_text="Generic link only: a regular expression the worker id must match.")
    manual_review = forms.BooleanField(required=False, label="Prolific: review every submission by hand")

    def service_kwargs(self) -> dict:
        data = dict(self.cleaned_data)
        for key in ("completion_code", "screenout_code"):
            data[key] = data[key].strip()
        data["expected_minutes"] = data.get("expected_minutes") or 30
        return data

    def add_service_errors(self, error: ValidationError) -> None:
        """Show ``services.create_study``'s errors at their fields (unknown keys above the form)."""
        messages = error.message_dict if hasattr(error, "error_dict") else {NON_FIELD_ERRORS: error.messages}
        for key, texts in messages.items():
            field = key if key in self.fields else None
            for text in texts:
                if field is None and key != NON_FIELD_ERRORS:
                    text = f"{key.replace('_', ' ')}: {text}"
                self.add_error(field, text)


class ReasonForm(forms.Form):
    reason = forms.CharField(
        max_length=500, strip=True,
        error_messages={"required": "give a reason: it is kept in the audit log"},
        widget=forms.TextInput(attrs={"placeholder": "reason (kept in the audit log)", "autocomplete": "off"}),
    )


class CloseForm(forms.Form):
    reason = forms.CharField(max_length=500, required=False, strip=True,
                             widget=forms.TextInput(attrs={"placeholder": "reason (optional)"}))
