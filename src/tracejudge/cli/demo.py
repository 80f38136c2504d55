"""``tracejudge demo``: the refund agent in four variants, judged by an embedded collector.

The demo's machinery (OpenAI SDK, OTel exporters, the collector) is imported inside the
command so that ``tracejudge --help`` and the other subcommands do not pay for it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from tracejudge.cli.terminal import colour_wanted, terminal_width


@click.command()
@click.option(
    "--rules",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Rules file (default: the refund rules shipped with tracejudge, "
    "as in examples/refund/rules.yaml).",
)
@click.option(
    "--baselines",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Baselines directory (default: the refund baselines shipped with tracejudge, "
    "as in examples/refund/baselines).",
)
@click.option(
    "--forward",
    "forward",
    multiple=True,
    metavar="URL",
    help="Also send the judged traces to this OTLP endpoint (grpc://host:4317 or "
    "http://host:4318/v1/traces); repeatable.",
)
@click.option(
    "--ui-url",
    metavar="URL",
    default=None,
    help="Trace UI base for the printed links (default: Jaeger on the forward host, :16686).",
)
@click.option(
    "--html",
    "html",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the HTML report page to this file.",
)
@click.option("--stream", is_flag=True, help="Use streamed chat completions.")
def demo(
    rules: Path | None,
    baselines: Path | None,
    forward: tuple[str, ...],
    ui_url: str | None,
    html: Path | None,
    stream: bool,
) -> None:
    """Run the example refund agent (real OpenAI SDK, local scripted model, no key, no
    network) in four variants through an embedded collector and print the verdicts."""
    from tracejudge.collector.config import ConfigError, check_forward_url
    from tracejudge.demo.paths import default_baselines, default_rules

    try:
        from tracejudge.demo.runner import DemoOptions, build_judge, run_demo
    except ModuleNotFoundError as exc:
        if exc.name != "openai":
            raise
        raise click.ClickException(
            "tracejudge demo drives the real OpenAI SDK, which is not installed here: "
            "pip install 'tracejudge[openai]'"
        ) from None
    from tracejudge.demo.table import render_table
    from tracejudge.engine import RulesError

    try:
        options = DemoOptions(
            rules=rules or default_rules(),
            baselines=baselines or default_baselines(),
            forward=list(forward),
            ui_url=ui_url,
            stream=stream,
        )
        for url in forward:
            check_forward_url(url)
        options.judge = build_judge(options.rules, options.baselines)
    except (FileNotFoundError, ConfigError, RulesError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(
        f"tracejudge demo: refund agent x {len(options.variants)} variants; "
        f"rules {options.rules}; baselines {options.baselines or 'none'}"
    )
    outcome = run_demo(options)
    counts = outcome.collector_stats.get("spans", {})
    lost = int(counts.get("dropped", 0))
    rows = outcome.rows
    if forward and (lost or not counts.get("forwarded")):
        rows = [replace(r, link=None) for r in rows]  # links to traces that never arrived
    click.echo("")
    click.echo(render_table(rows, colour=colour_wanted(), width=terminal_width()))
    click.echo("")
    if html is not None:
        from tracejudge.demo.report import write_html_report

        try:
            write_html_report(html, outcome)
        except OSError as exc:
            raise click.ClickException(f"cannot write the report to {html}: {exc}") from exc
        click.echo(f"report: {html}")
    if forward:
        click.echo(
            f"forwarded {counts.get('forwarded', 0)} judged spans to {', '.join(forward)}"
            + (f"; {lost} could not be delivered (no trace links printed)" if lost else "")
        )
    click.echo(f"{len(outcome.rows)} runs judged in {outcome.elapsed_s:.2f}s")
    broken = [r.variant for r in outcome.rows if r.verdict == "error"]
    if broken:
        raise click.ClickException(f"the demo could not judge: {', '.join(broken)}")
    if lost:
        raise click.ClickException(
            f"{lost} judged spans were lost: {', '.join(forward)} did not take them (is it "
            "running?). `tracejudge serve --queue-dir DIR` keeps undelivered spans on disk "
            "until the backend is back"
        )
