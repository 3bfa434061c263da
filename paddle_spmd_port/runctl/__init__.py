"""Run control shared by every command, one module per job:

* :mod:`.exits` -- the exit codes, :class:`~.exits.UsageError`, the prefix of a command's messages;
* :mod:`.signals` -- SIGINT/SIGTERM as :class:`~.signals.Interrupted`, what a run ended early says
  of itself and its partial report;
* :mod:`.command` -- :func:`~.command.run_command`, a command's body run with its exit code;
* :mod:`.grammar` -- the command-line grammar every command shares;
* :mod:`.paths` -- output paths checked before any work, one report per selection;
* :mod:`.memory` -- a long run's freed memory given back to the system between its stages;
* :mod:`.forked` -- a stage of a long run in a forked copy of the process, its result sent back.

Each name is imported from the module that holds it; this package re-exports nothing.

Exit codes, the same for every command (``python -m paddle_spmd_port COMMAND``)::

    code  name              meaning
    0     EXIT_OK           everything asked for was compared (or run) and agreed
    1     EXIT_FINDING      a finding: a mismatching cell (parity), a verdict the port does not
                            account for (launch), an unsound answer of the proposed rules (oracle)
    2     EXIT_USAGE        bad input: one line on stderr names the argument and what is valid;
                            nothing was run and nothing was written
    3     EXIT_INCOMPLETE   something asked for was not compared or not run (Paddle missing, a
                            backend unavailable, workers timing out, an empty selection, a launch
                            that failed, a GPU launch without a CUDA build or enough GPUs); the
                            report (or the one line) says what and why
    4     EXIT_INTERNAL     an internal error: an exception of ours nobody expected (a bug to
                            report); one line names it and the file its traceback was saved in.
                            A command that writes a partial report on a signal does the same
                            here: children ended, temp files removed, the partial report written
                            (its first line says ``INTERRUPTED by an internal error (...)``) and
                            named on the line -- or the line says why it could not be written
    130   SIGINT            interrupted: child processes ended, temp files removed, partial report
    143   SIGTERM           written (its first line says so)

A finding (1) outranks incompleteness (3): a run that mismatched and also left cases uncompared
exits 1, and its report lists both. A closed stdout (``... | head -1``) changes nothing: the rest
of the output is dropped, the run goes on to its end (report included) and exits with its own code.
Every message a command prints about itself starts ``paddle_spmd_port COMMAND:`` (:func:`.exits.prefix`).

How a command uses this package::

    from paddle_spmd_port.runctl.command import run_command

    def main(argv):
        return run_command("parity", lambda: _main(argv))

``_main`` raises :class:`~.exits.UsageError` for bad input (or uses :class:`~.grammar.ArgumentParser`,
whose errors are one line too); :class:`~.signals.Interrupted` reaches it wherever the main thread
was when SIGINT or SIGTERM arrived, so ``try/finally`` blocks end children, remove temp files and write the partial
report; setting ``exc.detail`` adds where that report is to the one line printed. An internal
error (any other ``Exception``) goes up the same blocks: a command catching it next to
:class:`~.signals.Interrupted` names it in its partial report with :func:`~.signals.stopped_by` and
writes that report through :func:`~.signals.write_partial`, which never raises;
:func:`~.signals.add_detail` puts where it is on the line.

The command-line grammar shared by every command lives in :mod:`.grammar`, so a flag is spelled and
checked one way everywhere: ``--rules a,b`` (:func:`rule_list`), ``--mesh 2x3`` (:func:`mesh_shape`),
``--meshes 2,2x3`` (:func:`mesh_list`), ``--profile`` (:func:`add_profile_argument`), ``--max-cases N``
(the first N cases in grid order), ``--sample N`` with ``--seed`` (a seeded sample)
(:func:`add_selection_arguments`), ``--shard K/M`` (part K of M of a long run: :func:`shard`), and
``--version``, which :class:`ArgumentParser` adds to every parser along with the exit-code table at
the end of ``--help``.
"""
