"""The shapes of the results API (``results.views``): Table 5's cells, annotator rows and agreement."""

from __future__ import annotations

from rest_framework import serializers


class TableCellSerializer(serializers.Serializer):
    task = serializers.CharField()
    shots = serializers.IntegerField()
    mean = serializers.FloatField(allow_null=True, help_text="Percent.")
    std = serializers.FloatField(allow_null=True, help_text="Percent, sample std (ddof=1); null when n < 2.")
    n = serializers.IntegerField()
    ci_low = serializers.FloatField(allow_null=True, required=False,
                                    help_text="Percent: 95% two-level bootstrap interval (annotators and items).")
    ci_high = serializers.FloatField(allow_null=True, required=False)
    majority = serializers.FloatField(allow_null=True, required=False,
                                      help_text="Percent: S1 of the cohort's majority answer.")
    planned = serializers.IntegerField(allow_null=True, required=False,
                                       help_text="Annotators needed for a 95% interval of ± target_points.")
    target_points = serializers.FloatField(required=False)


class AgreementRowSerializer(serializers.Serializer):
    cohort = serializers.IntegerField()
    task = serializers.CharField()
    shots = serializers.IntegerField()
    n = serializers.IntegerField()
    mean_pairwise_s1 = serializers.FloatField(allow_null=True)
    fleiss_kappa = serializers.FloatField(allow_null=True)


class ResultsSerializer(serializers.Serializer):
    std_ddof = serializers.IntegerField()
    mrc_gold = serializers.ChoiceField(choices=["best", "set"], help_text="How MRC gold lists were read.")
    mrc_gold_note = serializers.CharField(required=False, help_text="With an MRC task: the MRC gold rule.")
    cells = TableCellSerializer(many=True)
    annotators = serializers.ListField(child=serializers.DictField())
    agreement = AgreementRowSerializer(many=True)
    model_rows = serializers.ListField(
        child=serializers.DictField(), required=False,
        help_text="Model rows (baseline runs, mean ± std over runs) on this study's tasks, with the human-minus-model "
                  "gap (diff, ci_low, ci_high, items) and agreement (% items where the model gives the majority's "
                  "answer).")
