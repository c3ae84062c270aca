from django.shortcuts import render

from .selectors import task_overview


def task_list(request):
    """The tasks this visitor may see: the CLUES tasks and public ones; a researcher's own and shared ones too."""
    return render(request, "tasks_data/task_list.html", {"tasks": task_overview(request.user)})
