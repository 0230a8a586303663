"""Tests for omp_session.model.llm (agent → LLM messages) and model.prompt_format (reference §4.3)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from omp_session.model.llm import (
    BRANCH_SUMMARY_PREAMBLE,
    COMPACTION_SUMMARY_PREAMBLE,
    convert_to_llm,
    format_output_meta,
)
from omp_session.model.prompt_format import format_prompt_content

TS = 1_700_000_000_000
IMAGE_A = {"type": "image", "data": "QUFB", "mimeType": "image/png"}
IMAGE_B = {"type": "image", "data": "QkJC", "mimeType": "image/jpeg"}


def only(message: dict[str, Any]) -> dict[str, Any]:
    """Convert a single message and return the single result."""
    result = convert_to_llm([message])
    assert len(result) == 1
    return result[0]


def text_of(message: dict[str, Any]) -> str:
    """The text of a converted message that has exactly one text block."""
    converted = only(message)
    assert len(converted["content"]) == 1
    block = converted["content"][0]
    assert block["type"] == "text"
    text: str = block["text"]
    return text


def bash(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "role": "bashExecution",
        "command": "ls -la",
        "output": "a\nb",
        "exitCode": 0,
        "cancelled": False,
        "truncated": False,
        "timestamp": TS,
    }
    base.update(fields)
    return base


def python_exec(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "role": "pythonExecution",
        "code": "print(1)",
        "output": "1",
        "exitCode": 0,
        "cancelled": False,
        "truncated": False,
        "timestamp": TS,
    }
    base.update(fields)
    return base


# ----------------------------------------------------------------------------- format_prompt_content


class TestFormatPromptContent:
    def test_verified_example(self) -> None:
        assert format_prompt_content("CS text\n\n\nwith   spaces") == "CS text\n\nwith   spaces"

    def test_trailing_whitespace_trimmed_on_every_line(self) -> None:
        assert format_prompt_content("a  \n\tb\t\n  c ") == "a\n\tb\n  c"

    def test_single_blank_line_between_paragraphs_kept(self) -> None:
        assert format_prompt_content("a\n\nb") == "a\n\nb"

    def test_blank_runs_collapse_including_whitespace_only_lines(self) -> None:
        assert format_prompt_content("a\n \n\t\n\nb") == "a\n\nb"

    @pytest.mark.parametrize("item", ["- x", "* x", "1. x", "10. x", "  - nested"])
    def test_blank_before_list_item_dropped(self, item: str) -> None:
        assert format_prompt_content(f"Intro:\n\n{item}") == f"Intro:\n{item}"

    @pytest.mark.parametrize("not_item", ["-x", "*x", "1.x", "--- rule"])
    def test_blank_before_non_list_line_kept(self, not_item: str) -> None:
        assert format_prompt_content(f"Intro:\n\n{not_item}") == f"Intro:\n\n{not_item}"

    def test_blank_after_opening_tag_dropped(self) -> None:
        assert format_prompt_content("<summary>\n\ntext") == "<summary>\ntext"

    def test_blank_after_opening_tag_with_attributes_dropped(self) -> None:
        assert format_prompt_content('<file path="a.py">\n\nx') == '<file path="a.py">\nx'

    def test_blank_before_closing_tag_dropped(self) -> None:
        assert format_prompt_content("text\n\n</summary>") == "text\n</summary>"

    def test_blank_run_before_closing_tag_dropped(self) -> None:
        assert format_prompt_content("text\n\n\n\n</summary>") == "text\n</summary>"

    def test_tags_must_be_lowercase_whole_lines(self) -> None:
        assert format_prompt_content("<Summary>\n\nx") == "<Summary>\n\nx"
        assert format_prompt_content("<b>bold</b>\n\nx") == "<b>bold</b>\n\nx"
        assert format_prompt_content("x\n\n<br/>") == "x\n\n<br/>"

    def test_table_cell_padding_trimmed(self) -> None:
        assert format_prompt_content("| a  |  b |\n| c | d |") == "|a|b|\n|c|d|"

    def test_table_separator_normalised(self) -> None:
        text = "| L | R | C | N |\n| :------ | -----: | :--: | ------- |"
        assert format_prompt_content(text) == "|L|R|C|N|\n|:---|---:|:---:|---|"

    def test_table_indentation_kept(self) -> None:
        assert format_prompt_content("  | a | b |\n  |---|---|") == "  |a|b|\n  |---|---|"

    def test_line_with_single_pipe_is_not_a_table(self) -> None:
        assert format_prompt_content("| a  b") == "| a  b"

    def test_code_fence_content_kept_verbatim(self) -> None:
        text = "```\n| a  |  b |\n\n\n\n- x\n<t>\n\nend  \n```\n\n\nafter"
        expected = "```\n| a  |  b |\n\n\n\n- x\n<t>\n\nend\n```\n\nafter"
        assert format_prompt_content(text) == expected

    def test_indented_fence_and_language_tag_toggle(self) -> None:
        text = "  ```python\nx\n\n\ny\n  ```\n\n\nz"
        assert format_prompt_content(text) == "  ```python\nx\n\n\ny\n  ```\n\nz"

    def test_leading_and_trailing_blank_lines_removed(self) -> None:
        assert format_prompt_content("\n\n  \nbody\n\n \n") == "body"

    def test_empty_text(self) -> None:
        assert format_prompt_content("") == ""
        assert format_prompt_content("\n\n") == ""

    def test_javascript_whitespace_definition(self) -> None:
        # U+FEFF is whitespace for JavaScript's trim (not for Python); U+001F is the other way round.
        assert format_prompt_content("a\ufeff\nb\x1f") == "a\nb\x1f"
        assert format_prompt_content("a\r\n\r\n\r\nb\r") == "a\n\nb"


# ----------------------------------------------------------------------------- format_output_meta


def truncation(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "direction": "tail",
        "truncatedBy": "lines",
        "totalLines": 100,
        "totalBytes": 9000,
        "outputLines": 10,
        "outputBytes": 500,
    }
    base.update(fields)
    return {"truncation": base}


class TestFormatOutputMeta:
    @pytest.mark.parametrize("meta", [None, {}, {"source": {"type": "path", "value": "/x"}}, {"zzz": 1}])
    def test_nothing_to_say(self, meta: Any) -> None:
        assert format_output_meta(meta) == ""

    def test_verified_example(self) -> None:
        meta = truncation(
            truncatedBy="bytes", shownRange={"start": 91, "end": 100}, maxBytes=500, artifactId="3"
        )
        assert (
            format_output_meta(meta)
            == "\n\n[Showing lines 91-100 of 100 (500B limit). Read artifact://3 for full output]"
        )

    def test_without_shown_range(self) -> None:
        assert format_output_meta(truncation()) == "\n\n[Showing 10 of 100 lines]"

    def test_inverted_shown_range_is_ignored(self) -> None:
        meta = truncation(shownRange={"start": 5, "end": 4})
        assert format_output_meta(meta) == "\n\n[Showing 10 of 100 lines]"

    def test_next_offset(self) -> None:
        meta = truncation(direction="head", shownRange={"start": 1, "end": 10}, nextOffset=11)
        assert format_output_meta(meta) == "\n\n[Showing lines 1-10 of 100. Use offset=11 to continue]"

    def test_all_truncation_parts(self) -> None:
        meta = truncation(
            truncatedBy="bytes",
            shownRange={"start": 1, "end": 10},
            maxBytes=51200,
            nextOffset=11,
            artifactId="7",
        )
        assert format_output_meta(meta) == (
            "\n\n[Showing lines 1-10 of 100 (50.0KB limit). Use offset=11 to continue."
            " Read artifact://7 for full output]"
        )

    def test_byte_limit_falls_back_to_output_bytes(self) -> None:
        assert (
            format_output_meta(truncation(truncatedBy="bytes"))
            == "\n\n[Showing 10 of 100 lines (500B limit)]"
        )

    def test_byte_limit_without_any_size_is_omitted(self) -> None:
        meta = truncation(truncatedBy="bytes")
        del meta["truncation"]["outputBytes"]
        assert format_output_meta(meta) == "\n\n[Showing 10 of 100 lines]"

    @pytest.mark.parametrize(
        ("size", "shown"),
        [
            (0, "0B"),
            (1023, "1023B"),
            (1024, "1.0KB"),
            (1280, "1.3KB"),  # exact tie: JavaScript's toFixed rounds half up
            (1536, "1.5KB"),
            (1024 * 1024 - 1, "1024.0KB"),
            (1024 * 1024, "1.0MB"),
            (5 * 1024 * 1024 + 1024 * 1024 // 4, "5.3MB"),
            (3 * 1024**3, "3.0GB"),
            (2048 * 1024**3, "2048.0GB"),
        ],
    )
    def test_byte_sizes(self, size: int, shown: str) -> None:
        meta = truncation(truncatedBy="bytes", maxBytes=size)
        assert format_output_meta(meta) == f"\n\n[Showing 10 of 100 lines ({shown} limit)]"

    def test_limit_notices_in_order_after_truncation(self) -> None:
        meta = {
            **truncation(),
            "limits": {
                "columnTruncated": {"maxColumn": 500},
                "headLimit": {"reached": 5, "suggestion": 10},
                "resultLimit": {"reached": 20, "suggestion": 40},
                "matchLimit": {"reached": 100, "suggestion": 200},
            },
        }
        assert format_output_meta(meta) == (
            "\n\n[Showing 10 of 100 lines"
            ". 100 matches limit reached. Use limit=200 for more"
            ". 20 results limit reached. Use limit=40 for more"
            ". 5 results limit reached. Use limit=10 for more"
            ". Some lines truncated to 500 chars]"
        )

    def test_limits_alone(self) -> None:
        meta = {"limits": {"matchLimit": {"reached": 3, "suggestion": 6}}}
        assert format_output_meta(meta) == "\n\n[3 matches limit reached. Use limit=6 for more]"

    def test_diagnostics_block_follows_the_notice(self) -> None:
        meta = {
            **truncation(),
            "diagnostics": {
                "summary": "1 error(s)",
                "messages": ["a.ts:1:2 [error] boom", "b.ts:3:4 [warning] x"],
            },
        }
        assert format_output_meta(meta) == (
            "\n\n[Showing 10 of 100 lines]"
            "\n\nLSP Diagnostics (1 error(s)):\na.ts:1:2 [error] boom\nb.ts:3:4 [warning] x"
        )

    def test_empty_diagnostics_ignored(self) -> None:
        assert format_output_meta({"diagnostics": {"summary": "ok", "messages": []}}) == ""


# ----------------------------------------------------------------------------- bashExecution


class TestBashExecution:
    def test_output_and_success(self) -> None:
        assert only(bash()) == {
            "role": "user",
            "content": [{"type": "text", "text": "Ran `ls -la`\n```\na\nb\n```"}],
            "attribution": "user",
            "timestamp": TS,
        }

    @pytest.mark.parametrize("output", ["", None])
    def test_no_output(self, output: Any) -> None:
        assert text_of(bash(output=output)) == "Ran `ls -la`\n(no output)"

    def test_missing_output(self) -> None:
        message = bash()
        del message["output"]
        assert text_of(message) == "Ran `ls -la`\n(no output)"

    @pytest.mark.parametrize("exit_code", [0, 0.0, None])
    def test_no_exit_notice(self, exit_code: Any) -> None:
        assert text_of(bash(exitCode=exit_code)) == "Ran `ls -la`\n```\na\nb\n```"

    def test_absent_exit_code(self) -> None:
        message = bash()
        del message["exitCode"]
        assert text_of(message) == "Ran `ls -la`\n```\na\nb\n```"

    @pytest.mark.parametrize(("exit_code", "shown"), [(1, "1"), (127, "127"), (-1, "-1"), (2.0, "2")])
    def test_non_zero_exit(self, exit_code: Any, shown: str) -> None:
        expected = f"Ran `ls -la`\n```\na\nb\n```\n\nCommand exited with code {shown}"
        assert text_of(bash(exitCode=exit_code)) == expected

    def test_cancelled_wins_over_exit_code(self) -> None:
        text = text_of(bash(cancelled=True, exitCode=130, output=""))
        assert text == "Ran `ls -la`\n(no output)\n\n(command cancelled)"

    def test_meta_notice_appended_last(self) -> None:
        meta = truncation(shownRange={"start": 91, "end": 100})["truncation"]
        text = text_of(bash(exitCode=2, meta={"truncation": meta}))
        assert text == (
            "Ran `ls -la`\n```\na\nb\n```\n\nCommand exited with code 2\n\n[Showing lines 91-100 of 100]"
        )

    def test_output_is_not_trimmed(self) -> None:
        assert text_of(bash(output="x\n")) == "Ran `ls -la`\n```\nx\n\n```"

    def test_exclude_from_context_drops(self) -> None:
        assert convert_to_llm([bash(excludeFromContext=True)]) == []

    def test_exclude_from_context_false_keeps(self) -> None:
        assert len(convert_to_llm([bash(excludeFromContext=False)])) == 1

    def test_missing_timestamp_left_out(self) -> None:
        message = bash()
        del message["timestamp"]
        assert "timestamp" not in only(message)


# ----------------------------------------------------------------------------- pythonExecution


class TestPythonExecution:
    def test_output_and_success(self) -> None:
        assert only(python_exec()) == {
            "role": "user",
            "content": [
                {"type": "text", "text": "Ran Python:\n```python\nprint(1)\n```\nOutput:\n```\n1\n```"}
            ],
            "attribution": "user",
            "timestamp": TS,
        }

    def test_no_output(self) -> None:
        assert text_of(python_exec(output="")) == "Ran Python:\n```python\nprint(1)\n```\n(no output)"

    def test_cancelled(self) -> None:
        text = text_of(python_exec(output="", cancelled=True, exitCode=1))
        assert text == "Ran Python:\n```python\nprint(1)\n```\n(no output)\n\n(execution cancelled)"

    def test_failed(self) -> None:
        text = text_of(python_exec(output="Traceback", exitCode=1))
        assert text == (
            "Ran Python:\n```python\nprint(1)\n```\nOutput:\n```\nTraceback\n```"
            "\n\nExecution failed with code 1"
        )

    @pytest.mark.parametrize("exit_code", [0, None])
    def test_no_failure_notice(self, exit_code: Any) -> None:
        assert "failed" not in text_of(python_exec(exitCode=exit_code))

    def test_meta_notice(self) -> None:
        meta = {"truncation": truncation(artifactId="9")["truncation"]}
        text = text_of(python_exec(meta=meta))
        assert text.endswith("```\n1\n```\n\n[Showing 10 of 100 lines. Read artifact://9 for full output]")

    def test_exclude_from_context_drops(self) -> None:
        assert convert_to_llm([python_exec(excludeFromContext=True)]) == []


# ----------------------------------------------------------------------------- custom / hookMessage


class TestCustom:
    @pytest.mark.parametrize("role", ["custom", "hookMessage"])
    def test_string_content(self, role: str) -> None:
        message = {
            "role": role,
            "customType": "handoff",
            "content": "hello",
            "display": True,
            "details": {"x": 1},
            "attribution": "agent",
            "timestamp": TS,
        }
        assert only(message) == {
            "role": "user",
            "content": [{"type": "text", "text": "hello"}],
            "attribution": "agent",
            "timestamp": TS,
        }

    def test_array_content_as_is_and_attribution_absent(self) -> None:
        blocks = [{"type": "text", "text": "see"}, IMAGE_A]
        message = {"role": "custom", "customType": "t", "content": blocks, "display": False, "timestamp": TS}
        converted = only(message)
        assert converted == {"role": "user", "content": blocks, "timestamp": TS}
        assert "attribution" not in converted

    def test_user_attribution_copied(self) -> None:
        message = {
            "role": "custom",
            "customType": "t",
            "content": "x",
            "attribution": "user",
            "timestamp": TS,
        }
        assert only(message)["attribution"] == "user"


# ----------------------------------------------------------------------------- summaries


class TestSummaries:
    def test_branch_summary(self) -> None:
        message = {"role": "branchSummary", "summary": "Tried X.", "fromId": "abc", "timestamp": TS}
        assert only(message) == {
            "role": "user",
            "content": [
                {"type": "text", "text": f"{BRANCH_SUMMARY_PREAMBLE}\n\n<summary>\nTried X.\n</summary>"}
            ],
            "attribution": "agent",
            "timestamp": TS,
        }

    def test_compaction_summary_without_payload(self) -> None:
        message = {
            "role": "compactionSummary",
            "summary": "Done A.",
            "shortSummary": "A",
            "tokensBefore": 1234,
            "timestamp": TS,
        }
        assert only(message) == {
            "role": "user",
            "content": [
                {"type": "text", "text": f"{COMPACTION_SUMMARY_PREAMBLE}\n\n<summary>\nDone A.\n</summary>"}
            ],
            "attribution": "agent",
            "timestamp": TS,
        }

    def test_compaction_summary_copies_provider_payload(self) -> None:
        payload = {"type": "openaiResponsesHistory", "provider": "openai", "items": [{"type": "message"}]}
        message = {
            "role": "compactionSummary",
            "summary": "S",
            "tokensBefore": 1,
            "providerPayload": payload,
            "timestamp": TS,
        }
        converted = only(message)
        assert converted["providerPayload"] == payload
        assert list(converted) == ["role", "content", "attribution", "providerPayload", "timestamp"]

    def test_summary_is_post_processed(self) -> None:
        summary = "\n\nCS text  \n\n\nwith   spaces\n\n| a | b |\n|:-|-:|\n\n- item\n\n"
        message = {"role": "branchSummary", "summary": summary, "fromId": "x", "timestamp": TS}
        assert text_of(message) == (
            f"{BRANCH_SUMMARY_PREAMBLE}\n\n<summary>\n"
            "CS text\n\nwith   spaces\n\n|a|b|\n|:---|---:|\n- item\n</summary>"
        )

    def test_summary_preserves_code_fences(self) -> None:
        message = {"role": "compactionSummary", "summary": "```\nx\n\n\ny\n```", "timestamp": TS}
        assert (
            text_of(message) == f"{COMPACTION_SUMMARY_PREAMBLE}\n\n<summary>\n```\nx\n\n\ny\n```\n</summary>"
        )

    @pytest.mark.parametrize("summary", ["", None])
    def test_empty_summary(self, summary: Any) -> None:
        message = {"role": "branchSummary", "summary": summary, "fromId": "x", "timestamp": TS}
        assert text_of(message) == f"{BRANCH_SUMMARY_PREAMBLE}\n\n<summary>\n</summary>"

    def test_preambles_are_single_sentences(self) -> None:
        for preamble in (BRANCH_SUMMARY_PREAMBLE, COMPACTION_SUMMARY_PREAMBLE):
            assert "\n" not in preamble
            assert preamble == preamble.strip()
            assert format_prompt_content(preamble) == preamble


# ----------------------------------------------------------------------------- fileMention


class TestFileMention:
    def test_single_file(self) -> None:
        message = {
            "role": "fileMention",
            "files": [{"path": "src/a.py", "content": "x = 1", "lineCount": 1}],
            "timestamp": TS,
        }
        assert only(message) == {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": '<system-reminder>\n<file path="src/a.py">\nx = 1\n</file>\n</system-reminder>',
                }
            ],
            "attribution": "user",
            "timestamp": TS,
        }

    def test_empty_content_and_multiple_files(self) -> None:
        message = {
            "role": "fileMention",
            "files": [
                {"path": "big.bin", "content": "", "byteSize": 10**9, "skippedReason": "tooLarge"},
                {"path": "b.txt", "content": "line1\nline2"},
            ],
            "timestamp": TS,
        }
        assert text_of(message) == (
            '<system-reminder>\n<file path="big.bin">\n</file>\n\n'
            '<file path="b.txt">\nline1\nline2\n</file>\n</system-reminder>'
        )

    def test_images_appended_in_file_order(self) -> None:
        message = {
            "role": "fileMention",
            "files": [
                {"path": "one.png", "content": "", "image": IMAGE_A},
                {"path": "notes.md", "content": "hi"},
                {"path": "two.jpg", "content": "", "image": IMAGE_B},
            ],
            "timestamp": TS,
        }
        converted = only(message)
        assert converted["content"][1:] == [IMAGE_A, IMAGE_B]
        assert converted["content"][0]["text"] == (
            '<system-reminder>\n<file path="one.png">\n</file>\n\n<file path="notes.md">\nhi\n</file>'
            '\n\n<file path="two.jpg">\n</file>\n</system-reminder>'
        )

    def test_path_not_escaped(self) -> None:
        message = {"role": "fileMention", "files": [{"path": 'a"<&>.txt', "content": ""}], "timestamp": TS}
        assert '<file path="a"<&>.txt">' in text_of(message)

    def test_no_files(self) -> None:
        message = {"role": "fileMention", "files": [], "timestamp": TS}
        assert text_of(message) == "<system-reminder>\n\n</system-reminder>"


# ----------------------------------------------------------------------------- base roles


class TestBaseRoles:
    def test_user_attribution_defaults_to_user(self) -> None:
        message = {"role": "user", "content": "hi", "timestamp": TS}
        assert only(message) == {"role": "user", "content": "hi", "timestamp": TS, "attribution": "user"}

    def test_user_attribution_preserved(self) -> None:
        message = {
            "role": "user",
            "content": "hi",
            "attribution": "agent",
            "synthetic": True,
            "timestamp": TS,
        }
        assert only(message) == message

    def test_null_attribution_gets_default_in_place(self) -> None:
        message = {"role": "user", "attribution": None, "content": "hi", "timestamp": TS}
        converted = only(message)
        assert converted["attribution"] == "user"
        assert list(converted) == ["role", "attribution", "content", "timestamp"]

    def test_developer_attribution_defaults_to_agent(self) -> None:
        message = {"role": "developer", "content": [{"type": "text", "text": "d"}], "timestamp": TS}
        assert only(message) == {**message, "attribution": "agent"}

    def test_developer_attribution_preserved(self) -> None:
        message = {"role": "developer", "content": "d", "attribution": "user", "timestamp": TS}
        assert only(message)["attribution"] == "user"

    def test_assistant_unchanged(self) -> None:
        message = {
            "role": "assistant",
            "content": [{"type": "text", "text": "ok"}],
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "m",
            "usage": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3},
            "stopReason": "stop",
            "timestamp": TS,
        }
        converted = only(message)
        assert converted == message
        assert "attribution" not in converted
        assert converted is not message

    def test_tool_result_attribution_defaults_to_agent(self) -> None:
        message = {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "read",
            "content": [{"type": "text", "text": "x"}, IMAGE_A],
            "isError": False,
            "timestamp": TS,
        }
        assert only(message) == {**message, "attribution": "agent"}

    def test_tool_result_attribution_preserved(self) -> None:
        message = {
            "role": "toolResult",
            "content": [],
            "attribution": "user",
            "isError": False,
            "timestamp": TS,
        }
        assert only(message)["attribution"] == "user"

    def test_pruned_tool_result_keeps_concatenated_text(self) -> None:
        message = {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "bash",
            "content": [{"type": "text", "text": "ab"}, IMAGE_A, {"type": "text", "text": "cd"}],
            "isError": False,
            "timestamp": TS,
            "prunedAt": TS + 5,
        }
        converted = only(message)
        assert converted["content"] == [{"type": "text", "text": "abcd"}]
        assert converted["prunedAt"] == TS + 5
        assert list(converted) == [*message, "attribution"]

    def test_pruned_tool_result_without_text(self) -> None:
        message = {
            "role": "toolResult",
            "content": [IMAGE_A],
            "isError": False,
            "timestamp": TS,
            "prunedAt": 1,
        }
        assert only(message)["content"] == [{"type": "text", "text": "[Output truncated]"}]

    def test_pruned_tool_result_with_empty_content(self) -> None:
        message = {"role": "toolResult", "content": [], "isError": False, "timestamp": TS, "prunedAt": 1}
        assert only(message)["content"] == [{"type": "text", "text": "[Output truncated]"}]

    def test_pruned_at_null_means_not_pruned(self) -> None:
        message = {"role": "toolResult", "content": [IMAGE_A], "isError": False, "prunedAt": None}
        assert only(message)["content"] == [IMAGE_A]


# ----------------------------------------------------------------------------- whole-list behaviour


class TestConvertToLlm:
    @pytest.mark.parametrize(
        "message",
        [
            {"role": "system", "content": "x"},
            {"role": "weird"},
            {"content": "no role"},
            {"role": None},
            {"role": 5},
        ],
    )
    def test_unknown_roles_dropped(self, message: dict[str, Any]) -> None:
        assert convert_to_llm([message]) == []

    def test_non_objects_dropped(self) -> None:
        assert convert_to_llm([None, "user", 3, ["role"]]) == []  # type: ignore[list-item]

    def test_empty(self) -> None:
        assert convert_to_llm([]) == []

    def test_order_kept_and_drops_skipped(self) -> None:
        messages = [
            {"role": "user", "content": "u1", "timestamp": 1},
            bash(excludeFromContext=True),
            {"role": "assistant", "content": [], "timestamp": 2},
            {"role": "unknown"},
            python_exec(timestamp=3),
            {"role": "toolResult", "content": [], "isError": False, "timestamp": 4},
        ]
        converted = convert_to_llm(messages)
        assert [(m["role"], m["timestamp"]) for m in converted] == [
            ("user", 1),
            ("assistant", 2),
            ("user", 3),
            ("toolResult", 4),
        ]

    def test_inputs_not_mutated(self) -> None:
        messages: list[dict[str, Any]] = [
            bash(meta=truncation()),
            python_exec(),
            {"role": "custom", "customType": "t", "content": "c", "timestamp": TS},
            {"role": "hookMessage", "customType": "t", "content": [IMAGE_A], "timestamp": TS},
            {"role": "branchSummary", "summary": "s\n\n\n", "fromId": "f", "timestamp": TS},
            {"role": "compactionSummary", "summary": "s", "providerPayload": {"items": []}, "timestamp": TS},
            {
                "role": "fileMention",
                "files": [{"path": "p", "content": "", "image": IMAGE_A}],
                "timestamp": TS,
            },
            {"role": "user", "content": [{"type": "text", "text": "u"}], "timestamp": TS},
            {"role": "developer", "content": "d", "timestamp": TS},
            {"role": "assistant", "content": [], "timestamp": TS},
            {"role": "toolResult", "content": [IMAGE_A], "prunedAt": 1, "isError": False, "timestamp": TS},
        ]
        before = copy.deepcopy(messages)
        converted = convert_to_llm(messages)
        assert messages == before
        assert len(converted) == len(messages)
        # Changing the output must not reach back into the input either.
        for out in converted:
            out["role"] = "changed"
            if isinstance(out.get("content"), list):
                out["content"].append("junk")
        assert messages == before


class TestInterruptedTurnsUnderOmp18:
    """omp 18 drops an assistant turn the user interrupted before any output; omp 18.3 keeps one
    that carries ``requestControls`` (later requests replay them from it, 18.3 §2)."""

    @staticmethod
    def interrupted(**extra: Any) -> dict[str, Any]:
        return {
            "role": "assistant",
            "content": [{"type": "thinking", "thinking": "let me see"}],
            "stopReason": "aborted",
            "errorMessage": "Interrupted by user",
            "timestamp": 5,
            **extra,
        }

    def test_each_dialect_decides(self) -> None:
        from omp_session.dialects import OMP_13_19, OMP_18_2, OMP_18_3

        plain, controlled = self.interrupted(), self.interrupted(requestControls={"tool_removal": ["x"]})
        assert len(convert_to_llm([plain], OMP_13_19.context)) == 1  # omp 13.19 converts everything
        assert convert_to_llm([plain], OMP_18_2.context) == []
        assert convert_to_llm([controlled], OMP_18_2.context) == []
        assert convert_to_llm([plain], OMP_18_3.context) == []
        kept = convert_to_llm([controlled], OMP_18_3.context)
        assert [m["requestControls"] for m in kept] == [{"tool_removal": ["x"]}]

    def test_only_user_interrupts_without_output_are_dropped(self) -> None:
        from omp_session.dialects import OMP_18_3

        rules = OMP_18_3.context
        signed = self.interrupted(content=[{"type": "thinking", "thinking": "t", "thinkingSignature": "s"}])
        spoken = self.interrupted(content=[{"type": "text", "text": "partial answer"}])
        by_bit = self.interrupted(errorMessage="other", errorId=1 << 26)
        other_abort = self.interrupted(errorMessage="Request was aborted")
        marker = {"role": "custom", "customType": "interrupted-thinking", "content": "x", "display": False}
        assert len(convert_to_llm([signed], rules)) == 1
        assert len(convert_to_llm([spoken], rules)) == 1
        assert convert_to_llm([by_bit], rules) == []
        assert len(convert_to_llm([other_abort], rules)) == 1
        assert convert_to_llm([self.interrupted(), marker], rules)[0]["role"] == "assistant"
