"""Create the PostgreSQL database DATABASE_URL names when it does not exist yet; `make run` calls this first.

Without it a newcomer following the README's PostgreSQL block meets `migrate`'s OperationalError traceback. A
server that does not answer, or a role that may not create databases, ends in one line saying what to run.
SQLite needs nothing (the file is created on first use).
"""

from django.core.management.base import BaseCommand, CommandError
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections


def _reason(exc: Exception) -> str:
    return " ".join(line.strip() for line in str(exc).splitlines() if line.strip())


def _missing_database(exc: Exception) -> bool:
    return "does not exist" in str(exc) and "database" in str(exc)


class Command(BaseCommand):
    help = "Create the PostgreSQL database of DATABASE_URL if it is missing (SQLite: nothing to do)."

    def add_arguments(self, parser):
        parser.add_argument("--database", default=DEFAULT_DB_ALIAS)

    def handle(self, *args, database, **options):
        connection = connections[database]
        if connection.vendor != "postgresql":
            return
        settings = connection.settings_dict
        name, user = settings["NAME"], settings["USER"] or "postgres"
        where = f"{settings['HOST'] or 'localhost'}:{settings['PORT'] or 5432}"
        try:
            connection.ensure_connection()
            return
        except DatabaseError as exc:
            if not _missing_database(exc):
                raise CommandError(
                    f"PostgreSQL at {where} does not accept the connection of DATABASE_URL "
                    f"({_reason(exc)}). Start the server (e.g. `sudo service postgresql "
                    f"start`) or correct DATABASE_URL."
                ) from None
        finally:
            connection.close()
        try:
            # Through the maintenance database, as Django's test runner creates test databases.
            with connection._nodb_cursor() as cursor:
                cursor.execute(f"CREATE DATABASE {connection.ops.quote_name(name)}")
        except DatabaseError as exc:
            host, port = settings["HOST"] or "localhost", settings["PORT"] or 5432
            raise CommandError(
                f"The database {name!r} does not exist at {where} and the role {user!r} cannot create it "
                f"({_reason(exc)}). Create it with:\n"
                f"    createdb -h {host} -p {port} -U <a role that may> -O {user} {name}"
            ) from None
        self.stdout.write(f"Created the PostgreSQL database {name!r} at {where}.")
