"""Forms of the researcher dashboard.

``StudyForm`` is derived from the Study model: its fields are ``Study.parameters()``, and labels, help
texts, limits and ``Study.clean()`` are the model's (a ModelForm validates the instance), so the form,
the API and launch_study agree. Each crowd platform's own settings (``annotation.platform_settings``) are
fields of the form too, shown with the platform and passed on for the chosen platform only.
"""

from __future__ import annotations

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError

import crowd
from annotation import platform_settings, services
from annotation.models import AuditEvent, Study
from tasks_data import registry
from tasks_data.selectors import visible_slugs


def _shot_label(k: int) -> str:
    return "0 (description only)" if k == 0 else f"{k} shots"


class StudyForm(forms.ModelForm):
    # The two list fields are JSON on the model: shown as checkboxes of the registry's tasks and shots.
    tasks = forms.MultipleChoiceField(
        choices=[],  # the registry's tasks, when the form is made (__init__)
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "choose at least one task"},
    )
    shots = forms.TypedMultipleChoiceField(
        choices=[],  # 0 and the sizes of the tasks shown (__init__)
        coerce=int,
        widget=forms.CheckboxSelectMultiple,
        initial=list(Study.SHOT_CONDITIONS),
        error_messages={"required": "choose at least one shot condition"},
        help_text="One cohort of new workers per task and shot condition.",
    )
    # Ticked by default: a researcher who fills the form means to recruit, and a
    # created-but-not-launched cohort's link looked usable while it refused every worker. Unticked,
    # the study page says plainly which links refuse workers until launched.
    launch = forms.BooleanField(
        required=False,
        initial=True,
        label="Launch every cohort now",
        help_text="Ticked: the join links take workers as soon as you publish them. Unticked: the cohorts are "
        "created but their links refuse workers until you launch them from the study page "
        "(to try the links yourself first).",
    )

    class Meta:
        model = Study
        fields = Study.parameters()
        widgets = {"platform": forms.RadioSelect, "test_order": forms.RadioSelect}

    def __init__(self, *args, owner=None, **kwargs):
        super().__init__(*args, **kwargs)
        # The tasks this researcher may use (theirs, shared with them, public, and the CLUES tasks), and their sizes.
        self.owner = owner
        visible = visible_slugs(owner)
        specs = [spec for slug, spec in registry.tasks().items() if slug in visible]
        tasks, shots = self.fields["tasks"], self.fields["shots"]
        assert isinstance(tasks, forms.MultipleChoiceField) and isinstance(shots, forms.TypedMultipleChoiceField)
        tasks.choices = [(spec.slug, spec.name) for spec in specs]
        sizes = sorted({0, *Study.SHOT_CONDITIONS, *(k for spec in specs for k in spec.shots)})
        shots.choices = [(k, _shot_label(k)) for k in sizes]
        for name in ("completion_code", "screenout_code", "pay_currency", "sitting_minutes"):
            self.fields[name].required = False  # generated (codes) or the model's default when empty
        for name in ("platform", "test_order"):
            choice = self.fields[name]
            assert isinstance(choice, forms.ChoiceField)
            # Django normalises choices to (value, label) pairs when set; the stubs read back what may be set.
            pairs: list[tuple[str, str]] = choice.choices  # type: ignore[assignment]
            choice.choices = [(value, label) for value, label in pairs if value]  # no blank radio
        # The platform a new study gets when none is chosen: the first one configured for this researcher.
        self.initial["platform"] = crowd.default(owner=owner)
        # Every platform's own settings; only the chosen platform's are checked and passed on.
        self.setting_platform: dict[str, str] = {}
        for name, (provider, field) in platform_settings.all_fields().items():
            formfield = field.formfield(required=False)
            assert formfield is not None  # a platform setting is an editable model field
            self.fields[name] = formfield
            self.initial.setdefault(name, field.get_default())
            self.setting_platform[name] = provider.slug

    def platform_groups(self) -> list[dict]:
        """Per platform with fields of its own (its settings, and the study parameters only it reads): the
        provider and the bound fields, shown with that platform only."""
        groups = []
        for provider in crowd.PROVIDERS.values():
            names = [n for n in provider.study_parameters if n in self.fields]
            names += [n for n, slug in self.setting_platform.items() if slug == provider.slug]
            if names:
                groups.append({"provider": provider, "fields": [self[n] for n in names]})
        return groups

    def clean(self):
        super().clean()
        data = self.cleaned_data
        chosen = data.get("platform")
        for name, slug in self.setting_platform.items():
            if slug != chosen:  # another platform's setting: neither checked nor kept
                self.errors.pop(name, None)
                data.pop(name, None)
        return data

    def _post_clean(self):
        super()._post_clean()  # type: ignore[misc]  # the model's limits and Study.clean() (not in django-stubs)
        if not {"tasks", "shots", "chain"} & set(self.errors):
            # The imported data the cohorts need, shown with the rest.
            data = self.cleaned_data
            errors = services.data_errors(
                tasks=data["tasks"], shots=data["shots"], chain=data["chain"], user=self.owner
            )[0]
            for key, texts in errors.items():
                for text in texts:
                    self.add_error(key, text)

    def service_kwargs(self) -> dict:
        data = {name: self.cleaned_data[name] for name in (*Study.parameters(), "launch")}
        for key in ("completion_code", "screenout_code"):
            data[key] = data[key].strip()
        for name in ("pay_currency", "sitting_minutes"):
            if data[name] in (None, ""):
                del data[name]  # the model's default
        for name, slug in self.setting_platform.items():
            value = self.cleaned_data.get(name)
            if slug == data["platform"] and value not in (None, ""):  # left empty: the setting's default
                data[name] = value
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
        max_length=AuditEvent.REASON_MAX_LENGTH,
        strip=True,
        error_messages={"required": "give a reason: it is kept in the audit log"},
        widget=forms.TextInput(attrs={"placeholder": "reason (kept in the audit log)", "autocomplete": "off"}),
    )


class CloseForm(forms.Form):
    reason = forms.CharField(
        max_length=AuditEvent.REASON_MAX_LENGTH,
        required=False,
        strip=True,
        widget=forms.TextInput(attrs={"placeholder": "reason (optional)"}),
    )
