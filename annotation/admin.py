"""Django admin: a read-mostly window on the protocol's data.

Every change to studies, cohorts and enrollments goes through annotation.services (the API,
the dashboard, the management commands), so that the rules hold and the audit log records
it: here Study allows editing its name only, and Cohort, Worker, Enrollment, Answer and
AuditEvent are view-only (answers are final; the audit log is append-only). The admin is for
operators (superusers) only (clues_platform/admin.py); even they never see a worker's platform
session (it lets its holder take over the enrollment) or a join token here, and completion
codes only on a study's own page.
"""

from django.contrib import admin

from .models import Answer, AuditEvent, Cohort, Enrollment, Study, Worker


class ViewOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class CohortInline(admin.TabularInline):
    model = Cohort
    fields = ("task", "shots", "training_set", "target", "launched_at", "closed_at")  # no join token
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ("name", "created_by", "created_at", "platform", "workers_per_cohort", "pay_rate", "closed_at")
    list_filter = ("platform", "test_order")
    search_fields = ("name",)
    # Every parameter of the study (Study.parameters: the model's editable fields) is shown, read-only but the
    # name, so that a new field appears here without a second list to keep. The platform's own settings are
    # its app's to show (platform_settings).
    readonly_fields = (
        "created_by",
        "created_at",
        *(name for name in Study.parameters() if name != "name"),
        "has_attention_checks",
        "closed_at",
    )
    inlines = [CohortInline]

    def has_add_permission(self, request):
        return False  # create studies with the API or manage.py launch_study (they validate and make cohorts)

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Cohort)
class CohortAdmin(ViewOnlyAdmin):
    list_display = ("__str__", "task", "shots", "target", "launched_at", "closed_at")
    list_filter = ("task", "shots")
    list_select_related = ("study", "task")


@admin.register(Worker)
class WorkerAdmin(ViewOnlyAdmin):
    list_display = ("platform", "external_id", "user", "created_at")
    list_filter = ("platform",)
    search_fields = ("external_id",)


@admin.register(Enrollment)
class EnrollmentAdmin(ViewOnlyAdmin):
    exclude = ("platform_session", "platform_data")  # the platform's session id and assignment: credentials
    list_display = ("worker", "cohort", "state", "training_s1", "enrolled_at", "completed_at")
    list_filter = ("state", "cohort__study", "task")
    search_fields = ("worker__external_id",)
    list_select_related = ("worker", "cohort__study", "cohort__task")


@admin.register(Answer)
class AnswerAdmin(ViewOnlyAdmin):
    list_display = ("enrollment", "step", "position", "example", "texts", "s1", "answered_at")
    list_filter = ("step", "enrollment__cohort__study")
    list_select_related = ("enrollment__worker", "enrollment__cohort__study", "enrollment__cohort__task", "example")
    raw_id_fields = ("enrollment", "example")


@admin.register(AuditEvent)
class AuditEventAdmin(ViewOnlyAdmin):
    list_display = ("at", "study", "actor", "action", "from_state", "to_state", "reason")
    list_filter = ("action", "study")
    search_fields = ("actor", "reason")
    list_select_related = ("study",)
