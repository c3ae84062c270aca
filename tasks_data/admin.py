from django.contrib import admin

from .models import Example, Task, TrainingSet, TrainingSetItem


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "category", "answer_kind", "owner", "public", "source", "imported_at")
    list_filter = ("public",)
    # An operator makes a task of one's own public, or shares it; its data and card come from import_task only.
    readonly_fields = ("slug", "source", "fingerprint", "imported_at", "owner")
    fields = ("slug", "owner", "public", "shared_with", "source", "fingerprint", "imported_at")
    filter_horizontal = ("shared_with",)

    @admin.display(description="name")
    def name(self, obj):
        return obj.spec.name

    @admin.display(description="category")
    def category(self, obj):
        return obj.spec.category.value

    @admin.display(description="answer kind")
    def answer_kind(self, obj):
        return obj.spec.answer_kind.name


@admin.register(Example)
class ExampleAdmin(admin.ModelAdmin):
    list_display = ("clues_id", "task", "role", "position", "short_question", "gold")
    list_filter = ("task", "role", "genre", "is_impossible")
    search_fields = ("clues_id", "context", "question")
    list_select_related = ("task",)

    @admin.display(description="question")
    def short_question(self, obj):
        return obj.question[:80]


class TrainingSetItemInline(admin.TabularInline):
    model = TrainingSetItem
    raw_id_fields = ("example",)
    extra = 0


@admin.register(TrainingSet)
class TrainingSetAdmin(admin.ModelAdmin):
    list_display = ("__str__", "task", "shots", "split", "chain")
    list_filter = ("task", "shots", "chain")
    inlines = [TrainingSetItemInline]
