#!/usr/bin/env python3
"""Validates job files, and the job-file examples in Markdown files, against the JSON
Schema that `mirror schema` prints:

    mirror schema > mirror.schema.json
    python3 scripts/check/check-job-schema.py mirror.schema.json jobs/*.yaml README.md docs/*.md

A ```yaml block of a Markdown file with a top-level `version` key is a whole job file; one
that is a list of mappings with a `url` is a list of jobs; one with a top-level `auth`
key alone is the auth definitions of a job file (checked as one with a job); other blocks
(CI workflows) are not job files and are skipped. The schema must also reject a misspelt key, or this
check would prove nothing. Needs the `jsonschema` and `yaml` modules (Debian:
python3-jsonschema, python3-yaml). Exits 1 on any invalid file or example.
"""
import json
import re
import sys

import jsonschema
import yaml


def examples(path):
    """(label, document, is_job_list) for each job file or job-list example in a file."""
    text = open(path, encoding="utf-8").read()
    if not path.endswith(".md"):
        yield path, yaml.safe_load(text), False
        return
    for match in re.finditer(r"^```yaml\n(.*?)^```", text, re.S | re.M):
        line = text.count("\n", 0, match.start()) + 1
        document = yaml.safe_load(match.group(1))
        label = f"{path}:{line}"
        if isinstance(document, dict) and "version" in document:
            yield label, document, False
        elif isinstance(document, dict) and list(document) == ["auth"]:
            yield label, {"version": 1, "auth": document["auth"],
                          "jobs": [{"name": "a", "url": "https://x/", "records": ".", "id": "id", "table": "t"}]}, False
        elif isinstance(document, list) and all(isinstance(job, dict) and "url" in job for job in document):
            yield label, document, True


def main():
    schema = json.load(open(sys.argv[1], encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    file_validator = jsonschema.Draft202012Validator(schema)
    job_validator = jsonschema.Draft202012Validator({"$ref": "#/$defs/job", "$defs": schema["$defs"]})

    misspelt = {"version": 1, "jobs": [{"name": "a", "url": "https://x/", "records": ".", "id": "id",
                                         "table": "t", "pagse": {"from": 1}}]}
    if file_validator.is_valid(misspelt):
        print("job-file schema: accepts the unknown key 'pagse'", file=sys.stderr)
        return 1

    failed = 0
    checked = 0
    for path in sys.argv[2:]:
        for label, document, is_job_list in examples(path):
            checked += 1
            if is_job_list:
                errors = [error for job in document for error in job_validator.iter_errors(job)]
            else:
                errors = list(file_validator.iter_errors(document))
            for error in errors:
                where = "/".join(str(part) for part in error.absolute_path) or "(top)"
                print(f"{label}: {where}: {error.message}", file=sys.stderr)
            if errors:
                failed += 1
            else:
                print(f"job-file schema: {label} valid")
    if checked == 0:
        print("job-file schema: no job file found to check", file=sys.stderr)
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
