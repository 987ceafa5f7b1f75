#!/bin/sh
# Makes a test PKI in libvirt's layout under DIR with certtool (gnutls-bin):
#   DIR/CA/cacert.pem (its key in DIR/CA/cakey.pem),
#   DIR/libvirt/servercert.pem + private/serverkey.pem (localhost,
#   127.0.0.1, ::1), DIR/libvirt/clientcert.pem + private/clientkey.pem.
# Each run makes a new CA: two runs give two PKIs that do not trust each
# other.  Usage: mkpki.sh DIR [CN-PREFIX]; MKPKI_KEY_TYPE=rsa makes RSA
# keys (QEMU wants key encipherment in a server certificate, which an
# ECDSA key cannot have).
set -eu
dir=$1
cn=${2:-crane-test}
command -v certtool >/dev/null || {
    echo "mkpki.sh: certtool not found (apt-get install gnutls-bin)" >&2
    exit 1
}
mkdir -p "$dir/CA" "$dir/libvirt/private"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
q() { certtool "$@" >/dev/null 2>&1; }
cat >"$t/ca.info" <<EOT
cn = $cn CA
ca
cert_signing_key
expiration_days = 30
EOT
q --generate-privkey --key-type="${MKPKI_KEY_TYPE:-ecdsa}" --outfile "$dir/CA/cakey.pem"
q --generate-self-signed --load-privkey "$dir/CA/cakey.pem" \
    --template "$t/ca.info" --outfile "$dir/CA/cacert.pem"
cat >"$t/server.info" <<EOT
organization = crane
cn = localhost
dns_name = localhost
ip_address = 127.0.0.1
ip_address = ::1
tls_www_server
encryption_key
signing_key
expiration_days = 30
EOT
cat >"$t/client.info" <<EOT
organization = crane
cn = $cn client
tls_www_client
encryption_key
signing_key
expiration_days = 30
EOT
for who in server client; do
    q --generate-privkey --key-type="${MKPKI_KEY_TYPE:-ecdsa}" \
        --outfile "$dir/libvirt/private/${who}key.pem"
    q --generate-certificate --load-privkey "$dir/libvirt/private/${who}key.pem" \
        --load-ca-certificate "$dir/CA/cacert.pem" \
        --load-ca-privkey "$dir/CA/cakey.pem" \
        --template "$t/$who.info" --outfile "$dir/libvirt/${who}cert.pem"
done
chmod 600 "$dir/libvirt/private/"*.pem "$dir/CA/cakey.pem"
