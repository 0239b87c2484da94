#!/usr/bin/env bash
# Test-only PKI for tests/ops_security_test.cc, made fresh in DIR with the
# openssl CLI: a CA, a server certificate for localhost/127.0.0.1, a client
# certificate, a client certificate that expired in 2020, and a client
# certificate from another CA.
#   tests/ops_make_certs.sh DIR
set -euo pipefail
dir=$1
cd "$dir"
q() { "$@" >/dev/null 2>&1; }
mkca() {  # name
  q openssl req -x509 -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.pem" -days 3650 \
    -subj "/CN=gmmscore test $1"
}
mkca ca
mkca otherca
cat > ext.cnf <<'CNF'
[server]
subjectAltName = DNS:localhost, IP:127.0.0.1
extendedKeyUsage = serverAuth
[client]
extendedKeyUsage = clientAuth
CNF
sign() {  # name ca section
  q openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "/CN=$1"
  q openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -out "$1.pem" \
    -days 3650 -extfile ext.cnf -extensions "$3"
}
sign server ca server
sign client ca client
sign stranger otherca client
# Expired: `openssl ca` is the CLI that takes explicit dates.
mkdir -p db && : > db/index.txt && echo 1000 > db/serial
cat > ca.cnf <<'CNF'
[ca]
default_ca = test
[test]
database = db/index.txt
serial = db/serial
new_certs_dir = db
default_md = sha256
policy = any
x509_extensions = client
[any]
commonName = supplied
[client]
extendedKeyUsage = clientAuth
CNF
q openssl req -newkey rsa:2048 -nodes -keyout expired.key -out expired.csr -subj "/CN=expired"
q openssl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -in expired.csr -out expired.pem \
  -startdate 20200101000000Z -enddate 20200102000000Z
test -s expired.pem
