"""The shapes of the results API (``results.views``): Table 5's cells, annotator rows and agreement."""

from __future__ import annotations

from rest_framework import serializers

from .uncertainty import TARGETS, TASK_ITEMS, TEST_SET


class TableCellSerializer(serializers.Serializer):
    task = serializers.CharField()
    shots = serializers.IntegerField()
    mean = serializers.FloatField(allow_null=True, help_text="Percent.")
    std = serializers.FloatField(allow_null=True, help_text="Percent, sample std (ddof=1); null when n < 2.")
    n = serializers.IntegerField()
    ci_low = serializers.FloatField(
        allow_null=True,
        required=False,
        help_text=f"Percent: 95% interval for {TEST_SET}, {TARGETS[TEST_SET]}.",
    )
    ci_high = serializers.FloatField(allow_null=True, required=False)
    ci_task_low = serializers.FloatField(
        allow_null=True,
        required=False,
        help_text=f"Percent: 95% interval for {TASK_ITEMS}, {TARGETS[TASK_ITEMS]}.",
    )
    ci_task_high = serializers.FloatField(allow_null=True, required=False)
    majority = serializers.FloatField(
        allow_null=True, required=False, help_text="Percent: S1 of the cohort's majority answer."
    )
    flags = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="What this cell's own values show against its intervals: at_chance, outlier, past_scale, "
        "near_ceiling (meanings in interval_flags).",
    )
    model_based = serializers.BooleanField(
        required=False, help_text="Fewer than 5 annotators: the intervals rest on the normal model alone."
    )
    values = serializers.ListField(
        child=serializers.FloatField(), required=False, help_text="Percent: a model-based cell's annotators' S1."
    )
    planned = serializers.IntegerField(
        allow_null=True,
        required=False,
        help_text="Annotators needed for a 95% interval (this test set) of ± target_points in a share assurance of "
        "studies, with confidence plan_confidence over this pilot (the spread's upper confidence bound).",
    )
    plan_low = serializers.IntegerField(
        allow_null=True, required=False, help_text="10th percentile of the plans another pilot of this size gives."
    )
    plan_high = serializers.IntegerField(
        allow_null=True, required=False, help_text="90th percentile of the plans another pilot of this size gives."
    )
    assurance = serializers.FloatField(required=False)
    plan_confidence = serializers.FloatField(required=False)
    expected_minutes = serializers.FloatField(
        allow_null=True,
        required=False,
        help_text="The cohort's estimated minutes per annotator (annotation.estimates): the sum of its parts' listed "
        "minutes, the items x the time per item, measured once its workers finished parts.",
    )
    planned_cost = serializers.DecimalField(
        max_digits=12,
        decimal_places=2,
        allow_null=True,
        required=False,
        help_text="planned x expected time x the study's rate + the platform's service fee, in currency.",
    )
    planned_fee = serializers.DecimalField(max_digits=12, decimal_places=2, allow_null=True, required=False)
    fee_share = serializers.FloatField(required=False)
    currency = serializers.CharField(required=False)
    target_points = serializers.FloatField(required=False)


class AgreementRowSerializer(serializers.Serializer):
    cohort = serializers.IntegerField()
    task = serializers.CharField()
    shots = serializers.IntegerField()
    n = serializers.IntegerField()
    mean_pairwise_s1_percent = serializers.FloatField(allow_null=True)
    fleiss_kappa = serializers.FloatField(allow_null=True)
    krippendorff_alpha = serializers.FloatField(allow_null=True)
    alpha_distance = serializers.CharField(allow_null=True, help_text="nominal (labels) or jaccard (answer sets).")


class ResultsSerializer(serializers.Serializer):
    std_ddof = serializers.IntegerField()
    mrc_gold = serializers.ChoiceField(choices=["best", "set"], help_text="How MRC gold lists were read.")
    mrc_gold_note = serializers.CharField(required=False, help_text="With an MRC task: the MRC gold rule.")
    interval_targets = serializers.DictField(child=serializers.CharField(), help_text="What each interval estimates.")
    interval_flags = serializers.ListField(
        child=serializers.DictField(), required=False, help_text="The flagged cells: task, shots, flags, texts."
    )
    cells = TableCellSerializer(many=True)
    aggregates = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text="Aggregated human rows stored by manage.py fit_results: task, shots, method, s1 (percent), n.",
    )
    abilities = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text="The joint ability scale (1PL IRT) stored by manage.py fit_results: one row per cohort and "
        "respondent (annotator or model run).",
    )
    model_rows_no_human_cohort = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text="Model rows of a task and shots the study has no human cohort of (no gap).",
    )
    annotators = serializers.ListField(child=serializers.DictField())
    agreement = AgreementRowSerializer(many=True)
    model_rows = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text="Model rows (baseline runs, mean ± std over runs) beside a human cohort of the same task and shots, "
        "with the human-minus-model gap (diff, ci_low, ci_high, items) and agreement (% items where the model gives "
        "the majority's answer).",
    )
