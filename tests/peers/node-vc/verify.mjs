// The W3C Verifiable Credential verifier of the tests: Digital Bazaar's @digitalbazaar/vc with its
// eddsa-jcs-2022 cryptosuite (the versions package-lock.json pins), run on one credential file.
//
//   node verify.mjs CREDENTIAL.json URL=FILE [URL=FILE…]
//
// Each URL=FILE pins a JSON-LD context: the verifier loads FILE for URL (the W3C's credentials context kept in
// fixtures/jsonld/, g6's own as g6 ships it). A did:key is resolved from the DID itself
// (@digitalbazaar/did-method-key). Nothing is fetched: any other URL is an error, so the verdict never depends
// on the network.
//
// Two verdicts: `verified`, @digitalbazaar/vc's verifyCredential (the proof, the credential's shape and dates);
// `jsonld`, the credential expanded by jsonld.js in safe mode with only the pinned contexts (every term defined,
// nothing dropped, nothing fetched), which the JCS proof alone never needs. Prints one JSON line
// {"verified": bool, "error": string|null, "jsonld": {"ok": bool, "error": string|null}, "versions": {...}} and
// exits 0 when both hold, 1 when not, 2 on bad arguments.
import {readFileSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';

import jsonld from 'jsonld';
import * as vc from '@digitalbazaar/vc';
import {DataIntegrityProof} from '@digitalbazaar/data-integrity';
import {createVerifyCryptosuite} from '@digitalbazaar/eddsa-jcs-2022-cryptosuite';
import * as DidKey from '@digitalbazaar/did-method-key';
import * as Ed25519Multikey from '@digitalbazaar/ed25519-multikey';

const HERE = dirname(fileURLToPath(import.meta.url));
const PACKAGES = ['jsonld', '@digitalbazaar/vc', '@digitalbazaar/data-integrity', '@digitalbazaar/eddsa-jcs-2022-cryptosuite',
  '@digitalbazaar/did-method-key', '@digitalbazaar/ed25519-multikey'];

function versions() {
  const out = {};
  for(const name of PACKAGES) {
    // what npm installed, read from the package itself (its "exports" do not list package.json)
    out[name] = JSON.parse(readFileSync(join(HERE, 'node_modules', name, 'package.json'), 'utf8')).version;
  }
  return out;
}

function documentLoaderFor(pins) {
  const pinned = new Map();
  for(const pin of pins) {
    const at = pin.indexOf('=');
    pinned.set(pin.slice(0, at), JSON.parse(readFileSync(pin.slice(at + 1), 'utf8')));
  }
  const didKey = DidKey.driver();
  didKey.use({multibaseMultikeyHeader: 'z6Mk', fromMultibase: Ed25519Multikey.from});
  return async url => {
    if(pinned.has(url)) {
      return {contextUrl: null, documentUrl: url, document: pinned.get(url)};
    }
    if(url.startsWith('did:key:')) {
      return {contextUrl: null, documentUrl: url, document: await didKey.get({url})};
    }
    throw new Error(`not pinned, not fetched: ${url}`);
  };
}

async function main(argv) {
  const [credentialFile, ...pins] = argv;
  if(!credentialFile || pins.some(p => !p.includes('='))) {
    console.log(JSON.stringify({verified: false, error: 'usage: node verify.mjs CREDENTIAL.json URL=FILE…'}));
    return 2;
  }
  const credential = JSON.parse(readFileSync(credentialFile, 'utf8'));
  const documentLoader = documentLoaderFor(pins);
  const expanded = await jsonld.expand(structuredClone(credential), {documentLoader, safe: true})
    .then(() => ({ok: true, error: null}), e => ({ok: false, error: e.message || String(e)}));
  const suite = new DataIntegrityProof({cryptosuite: createVerifyCryptosuite()});
  const result = await vc.verifyCredential({credential, suite, documentLoader});
  const errors = [result.error, ...(result.results || []).map(r => r.error)].filter(Boolean)
    .flatMap(e => e.errors ? [e, ...e.errors] : [e]);
  console.log(JSON.stringify({
    verified: result.verified === true,
    error: result.verified ? null : errors.map(e => e.message || String(e)).join('; ') || 'not verified',
    jsonld: expanded,
    versions: versions()
  }));
  return result.verified === true && expanded.ok ? 0 : 1;
}

process.exitCode = await main(process.argv.slice(2));
