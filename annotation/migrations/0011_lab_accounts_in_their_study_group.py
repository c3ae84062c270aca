"""Lab accounts are bound to their study: every account ``create_lab_workers`` made before (``lab-s<study>-<n>``)
joins its study's lab group (``crowd.lab.group_name``), so that lab workers of a running study keep getting in."""

import re

from django.db import migrations

USERNAME = re.compile(r"lab-s(\d+)-\d{3,}\Z")
GROUP = "lab workers of study {study}"  # crowd.lab.GROUP, as it was when this migration was written


def bind(apps, schema_editor):
    User = apps.get_model("auth", "User")
    Group = apps.get_model("auth", "Group")
    Study = apps.get_model("annotation", "Study")
    lab_studies = set(Study.objects.filter(platform="local").values_list("pk", flat=True))
    for user in User.objects.filter(username__startswith="lab-s"):
        match = USERNAME.match(user.username)
        if match and int(match[1]) in lab_studies:
            group, _ = Group.objects.get_or_create(name=GROUP.format(study=int(match[1])))
            user.groups.add(group)


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("annotation", "0010_platform_columns_to_their_provider"),
    ]

    operations = [migrations.RunPython(bind, migrations.RunPython.noop)]
