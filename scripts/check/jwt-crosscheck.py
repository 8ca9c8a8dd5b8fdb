#!/usr/bin/env python3
"""Makes JSON Web Tokens with PyJWT from the test keys and claims that JWTSignerTests uses,
and verifies tokens that JWTSigner made, so that mirror's signer is checked against an
independent one both ways.

    python3 -m venv /tmp/v && /tmp/v/bin/pip install pyjwt cryptography
    /tmp/v/bin/python scripts/check/jwt-crosscheck.py > Tests/MirrorHTTPTests/Fixtures/jwt-pyjwt.json
    /tmp/v/bin/python scripts/check/jwt-crosscheck.py verify TOKEN...

The keys are Tests/MirrorHTTPTests/Fixtures/jwt/*.pem, made once with OpenSSL for the tests
and used nowhere else:

    openssl genrsa -traditional -out rsa-pkcs1.pem 2048          # RSA PRIVATE KEY (PKCS#1)
    openssl pkcs8 -topk8 -nocrypt -in rsa-pkcs1.pem -out rsa-pkcs8.pem
    openssl rsa -in rsa-pkcs1.pem -pubout -out rsa-public.pem
    openssl ecparam -name prime256v1 -genkey -noout -out ec-sec1.pem   # EC PRIVATE KEY (SEC1)
    openssl pkcs8 -topk8 -nocrypt -in ec-sec1.pem -out ec-pkcs8.pem
    openssl ec -in ec-sec1.pem -pubout -out ec-public.pem
    openssl ecparam -name secp384r1 -genkey -noout -out ec-p384-sec1.pem
    openssl genrsa -traditional -out rsa-1024-pkcs1.pem 1024
    openssl pkcs8 -topk8 -v2 aes-256-cbc -passout pass:fixture -in ec-sec1.pem -out ec-encrypted.pem

How the tokens are checked:

1. Written: this script signs each entry's claims (the exact bytes, through
   jwt.api_jws.encode) with PyJWT, header {"alg", "kid" if any, "typ": "JWT"} with its names
   sorted, as JWTSigner writes it, and prints the entries with their tokens as JSON.
2. RS256 (RSASSA-PKCS1-v1_5 is deterministic): the test signs the same claims with the same
   key, from both its PKCS#1 and its PKCS#8 PEM, and expects PyJWT's token byte for byte.
3. ES256 (ECDSA takes a random nonce, so two tokens never match): the test verifies PyJWT's
   token with ec-public.pem (the signature read as r || s, 64 bytes) and its own token the
   same way, and checks that its header and claims parts are PyJWT's.
4. The other way, by hand: tokens JWTSigner made (from `swift test --filter JWTSigner`
   with a token printed) are given to `verify`, which checks each with PyJWT
   (jwt.api_jws.decode_complete against the public key of its algorithm) and prints its
   header and claims; it exits 1 if any fails.
"""
import json
import pathlib
import sys

import jwt
from jwt import api_jws

KEYS = pathlib.Path(__file__).resolve().parents[2] / "Tests" / "MirrorHTTPTests" / "Fixtures" / "jwt"
PUBLIC = {"RS256": "rsa-public.pem", "ES256": "ec-public.pem"}

GITHUB_APP = '{"iat":1763625540,"exp":1763626140,"iss":"123456"}'
SERVICE_ACCOUNT = (
    '{"iss":"mirror@example-project.iam.gserviceaccount.com",'
    '"scope":"https://www.googleapis.com/auth/drive.readonly",'
    '"aud":"https://oauth2.googleapis.com/token","exp":1763629200,"iat":1763625600}'
)
UNICODE = '{"sub":"caf\u00e9 \u1234","n":[1,2,3],"note":"a \\"quoted\\" word"}'

# name, algorithm, private key file, key id, claims.
ENTRIES = [
    ("rs256-pkcs1-github-app", "RS256", "rsa-pkcs1.pem", None, GITHUB_APP),
    ("rs256-pkcs8-github-app", "RS256", "rsa-pkcs8.pem", None, GITHUB_APP),
    ("rs256-pkcs1-kid", "RS256", "rsa-pkcs1.pem", "4f1e9a7c-key", SERVICE_ACCOUNT),
    ("rs256-pkcs8-unicode-escaped-kid", "RS256", "rsa-pkcs8.pem", 'k"1\\', UNICODE),
    ("es256-sec1-github-app", "ES256", "ec-sec1.pem", None, GITHUB_APP),
    ("es256-pkcs8-kid", "ES256", "ec-pkcs8.pem", "ec-key-1", SERVICE_ACCOUNT),
    ("es256-sec1-unicode", "ES256", "ec-sec1.pem", None, UNICODE),
]


def make():
    out = []
    for name, algorithm, key_file, key_id, claims in ENTRIES:
        key = (KEYS / key_file).read_text()
        headers = {"kid": key_id} if key_id is not None else None
        token = api_jws.encode(claims.encode(), key, algorithm=algorithm, headers=headers)
        out.append({
            "name": name, "algorithm": algorithm, "key": key_file, "public_key": PUBLIC[algorithm],
            "key_id": key_id, "claims": claims, "token": token,
        })
    json.dump(out, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    print(f"{len(out)} tokens made with PyJWT {jwt.__version__}", file=sys.stderr)


def verify(tokens):
    failed = 0
    for token in tokens:
        algorithm = jwt.get_unverified_header(token).get("alg")
        try:
            if algorithm not in PUBLIC:
                raise ValueError(f"unexpected algorithm {algorithm!r}")
            key = (KEYS / PUBLIC[algorithm]).read_text()
            decoded = api_jws.decode_complete(token, key, algorithms=[algorithm])
            print(f"ok {algorithm} header={json.dumps(decoded['header'])} claims={decoded['payload'].decode()}")
        except Exception as error:  # noqa: BLE001 - every failure is reported the same way
            failed += 1
            print(f"FAILED {algorithm}: {error}")
    return 1 if failed else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["verify"]:
        sys.exit(verify(sys.argv[2:]))
    make()
