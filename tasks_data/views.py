from django.shortcuts import render

from .selectors import task_overview


def task_list(request):
    return render(request, "tasks_data/task_list.html", {"tasks": task_overview()})
