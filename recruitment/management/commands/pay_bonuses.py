from django.core.management.base import CommandError

from recruitment.bonuses import money_states, pay_bonuses, settle

from ._study_command import StudyCommand


class Command(StudyCommand):
    help = (
        "Top approved workers up to the study's hourly rate over their active time; never pays twice. "
        "--settle BULK --paid/--not-paid records what Prolific says about a pay call whose outcome is unknown."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--settle", metavar="BULK_ID", help="a bulk bonus payment whose pay call was interrupted")
        outcome = parser.add_mutually_exclusive_group()
        outcome.add_argument("--paid", action="store_true", help="Prolific shows it paid")
        outcome.add_argument("--not-paid", action="store_true", help="Prolific shows it not paid: pay it again")

    def handle(self, *args, **options):
        study = self.get_study(options)
        if options.get("settle"):
            if not (options["paid"] or options["not_paid"]):
                raise CommandError("--settle needs --paid or --not-paid (what Prolific shows for that payment)")
            try:
                count = settle(study, bulk_id=options["settle"], paid=options["paid"])
            except ValueError as exc:
                raise CommandError(str(exc)) from None
            self.stdout.write(
                f"settled {count} bonus(es) of bulk {options['settle']} as "
                + ("paid" if options["paid"] else "not paid (the next run pays them)")
            )
            return
        try:
            report = pay_bonuses(study)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        for (pid, amount), part in zip(report.paid, report.paid_parts, strict=True):
            self.stdout.write(f"paid {pid} {amount:.2f}" + (f" ({part})" if part else ""))
        for pid in report.failed:
            self.stdout.write(f"not paid {pid}: Prolific refused; run again later")
        states = money_states(study)
        self.stdout.write(
            f"ledger: {states.paid} paid, {states.in_flight_count} in flight, {states.unknown_count} unknown, "
            f"{states.planned + states.set_up} to pay"
        )
        for _bulk, pids, how in states.in_flight:
            self.stdout.write(f"IN FLIGHT {', '.join(pids)}: {how}")
        for _bulk, pids, how in states.unknown:
            self.stdout.write(f"UNKNOWN {', '.join(pids)}: the pay call got no answer; {how}")
