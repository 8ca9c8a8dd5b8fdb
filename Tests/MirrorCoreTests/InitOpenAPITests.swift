import Foundation
@testable import MirrorCore
import Testing

/// `mirror init --openapi`: the job file an OpenAPI description gives.
@Suite("init from an OpenAPI description", .timeLimit(.minutes(6)))
struct InitOpenAPITests {
    /// Writes the files into a fresh folder and reads the first.
    private func read(_ files: [(String, String)], baseURL: String? = nil) throws -> (yaml: String?, error: String?, folder: String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("init-openapi-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for (name, text) in files { try text.write(toFile: folder + "/" + name, atomically: true, encoding: .utf8) }
        do {
            return (try OpenAPIJobs.read(path: folder + "/" + files[0].0, baseURL: baseURL).yaml(), nil, folder)
        } catch {
            return (nil, error.description, folder)
        }
    }

    @Test("page numbers with their size and total pages, offsets under a parent's id, $refs local and in a file beside, a bearer scheme")
    func pagesOffsetsChild() throws {
        let read = try read([("pets.yaml", Self.pets), ("common.yaml", Self.common)])
        defer { try? FileManager.default.removeItem(atPath: read.folder) }
        #expect(read.error == nil)
        #expect(read.yaml == #"""
        # written by `mirror init --openapi` from pets.yaml; check it with `mirror check`, then `mirror run` it
        version: 1
        auth:
          bearerAuth:
            type: bearer
            token: "${BEARER_AUTH_TOKEN}"
        jobs:
          - name: pets
            # query parameter `page` (from 1) and `per_page` (20): page numbers; the walk ends after the `total_pages` pages
            url: "https://api.example.com/v1/pets?page={page}&per_page=20"
            pages: { from: 1, step: 1 }
            stop: { pages: total_pages }
            # the 200 response's `data` is its array of objects
            records: data
            # the records' schema requires `pet_id`, named like an id
            id: pet_id
            table: pets
            auth: bearerAuth
          - name: pets_visits
            parent: pets
            # query parameters `offset` and `limit` (200, its maximum): offsets that move by 200 a page; the walk ends when the records reach `total`; walked once per record of `pets`, its `pet_id` in the path
            url: "https://api.example.com/v1/pets/{parent.pet_id}/visits?offset={page}&limit=200"
            pages: { from: 0, step: 200 }
            stop: { total: total }
            # the 200 response's `visits` is its array of objects
            records: visits
            # the records' schema has `id`
            id: id
            table: pets_visits
            auth: bearerAuth
        # GET /search: the 200 response has no array of objects
        # GET /owners/{owner}/pets/{name}: 2 path parameters ({owner}, {name}): a child job takes one parent's id
        # GET /pets/{pet_id}: the 200 response has no array of objects
        """# + "\n")
    }

    @Test("keyset and token cursors, a next link, several arrays, OpenAPI 3.1's null types, oauth2, api key, basic and unwritable schemes")
    func cursorsLinksAuth() throws {
        let read = try read([("shop.json", Self.shop)])
        defer { try? FileManager.default.removeItem(atPath: read.folder) }
        #expect(read.error == nil)
        #expect(read.yaml == #"""
        # written by `mirror init --openapi` from shop.json; check it with `mirror check`, then `mirror run` it
        # GET /v1/notes: no security scheme mirror writes: 'openid' (openIdConnect); write its `auth:` by hand
        version: 1
        auth:
          oauth:
            type: oauth2
            token_url: "https://shop.example.com/oauth/token"
            client_id: "${OAUTH_CLIENT_ID}"
            client_secret: "${OAUTH_CLIENT_SECRET}"
          keyQuery:
            type: api_key
            query: api_key
            value: "${KEY_QUERY_KEY}"
          basicAuth:
            type: basic
            username: "${BASIC_AUTH_USERNAME}"
            password: "${BASIC_AUTH_PASSWORD}"
        jobs:
          - name: customers
            # the first request leaves the `{cursor}` parameter out
            url: "https://shop.example.com/api/v1/customers?starting_after={cursor}"
            # query parameter `starting_after`: the last record's id goes back in it and `has_more` says whether more follow
            next: { cursor: "data.-1.id" }
            stop: { has_more: has_more }
            # the 200 response's `data` is its array of objects
            records: data
            # the records' schema has `id`
            id: id
            table: customers
            auth: oauth
          - name: events
            # the first request leaves the `{cursor}` parameter out
            url: "https://shop.example.com/api/v1/events?page_token={cursor}"
            # query parameter `page_token`: the 200 response's `next_page_token` holds the next page's cursor
            next: { cursor: next_page_token }
            # the 200 response has three arrays of objects, `events`, `included`, `data`; chose `data`
            records: data
            # the records' schema has `id`
            id: id
            table: events
            auth: keyQuery
          - name: feed
            url: "https://shop.example.com/api/v1/feed"
            # the 200 response's `links.next` is a string: the next page's URL
            next: { url: links.next }
            # the 200 response's `entries` is its array of objects
            records: entries
            # the records' schema requires `uuid`, named like an id
            id: uuid
            table: feed
          - name: tags
            # no page, offset or cursor parameter and no next URL in the 200 response: one request
            url: "https://shop.example.com/api/v1/tags"
            # the 200 response's schema is an array of objects
            records: "."
            # the records' schema requires `slug`, named like an id
            id: slug
            table: tags
            auth: basicAuth
          - name: notes
            # no page, offset or cursor parameter and no next URL in the 200 response: one request
            url: "https://shop.example.com/api/v1/notes"
            # the 200 response's schema is an array of objects
            records: "."
            # the records' schema has `id`
            id: id
            table: notes
        """# + "\n")
    }

    @Test("--base-url stands for a relative server; JSON is chosen among the 200 response's content types")
    func baseURL() throws {
        let read = try read([("petstore.yaml", Self.relative)], baseURL: "http://127.0.0.1:8080/")
        defer { try? FileManager.default.removeItem(atPath: read.folder) }
        #expect(read.yaml == #"""
        # written by `mirror init --openapi` from petstore.yaml; check it with `mirror check`, then `mirror run` it
        version: 1
        jobs:
          - name: pet_findByStatus
            # no page, offset or cursor parameter and no next URL in the 200 response: one request
            url: "http://127.0.0.1:8080/pet/findByStatus"
            # the 200 response's schema is an array of objects
            records: "."
            # the records' schema has `id`
            id: id
            table: pet_findByStatus
        """# + "\n")
    }

    @Test("Swagger 2.0, a relative server without --base-url, and no list operation (a parameter inside a segment too): no job, a message saying why")
    func refused() throws {
        let swagger = try read([("swagger.yaml", "swagger: \"2.0\"\npaths: {}\n")])
        #expect(swagger.error == "\(swagger.folder)/swagger.yaml is not an OpenAPI 3.x description (it is Swagger '2.0'); no job written")
        let relative = try read([("petstore.yaml", Self.relative)])
        #expect(relative.error == "\(relative.folder)/petstore.yaml: servers[0].url '/api/v3' is not an http or https URL: "
            + "give the API's with --base-url; no job written")
        let none = try read([("status.yaml", Self.noList)])
        #expect(none.error == "\(none.folder)/status.yaml: no GET or POST search answers a list of objects "
            + "(GET /status: the 200 response has no array of objects; GET /exports/{day}.json: its path parameter {day} "
            + "names no list's id (a child job's parent is the list at the path before it)); no job written")
        for folder in [swagger.folder, relative.folder, none.folder] { try? FileManager.default.removeItem(atPath: folder) }
    }

    @Test("a list renamed for a name already taken is the parent of the child jobs under its own path")
    func renamedParent() throws {
        let read = try read([("zoo.yaml", Self.twoPets)])
        defer { try? FileManager.default.removeItem(atPath: read.folder) }
        #expect(read.error == nil)
        #expect(read.yaml == #"""
        # written by `mirror init --openapi` from zoo.yaml; check it with `mirror check`, then `mirror run` it
        version: 1
        jobs:
          - name: pets
            # no page, offset or cursor parameter and no next URL in the 200 response: one request
            url: "http://zoo.test/pets"
            # the 200 response's schema is an array of objects
            records: "."
            # the records' schema has `id`
            id: id
            table: pets
          - name: pets_2
            # no page, offset or cursor parameter and no next URL in the 200 response: one request
            url: "http://zoo.test/v2/pets"
            # the 200 response's schema is an array of objects
            records: "."
            # the records' schema has `id`
            id: id
            table: pets_2
          - name: pets_visits
            parent: pets_2
            # no page, offset or cursor parameter and no next URL in the 200 response: one request; walked once per record of `pets_2`, its `id` in the path
            url: "http://zoo.test/v2/pets/{parent.id}/visits"
            # the 200 response's schema is an array of objects
            records: "."
            # the records' schema has `id`
            id: id
            table: pets_visits
        """# + "\n")
    }

    @Test("a $ref on another host stops init with its place, unless only an operation init does not write uses it")
    func remoteReference() throws {
        let remote = try read([("remote.yaml", Self.remote)])
        defer { try? FileManager.default.removeItem(atPath: remote.folder) }
        #expect(remote.error == "remote.yaml at /paths/~1pets/get/responses/200/content/application~1json/schema/items: "
            + "the $ref 'https://schemas.example.com/pet.yaml#/components/schemas/Pet' is on another host and init never fetches: "
            + "save that file beside remote.yaml and point the $ref at it ('pet.yaml#/components/schemas/Pet'); no job written")
        let out = remote.folder + "/jobs/remote.yaml"
        #expect(throws: InitFailure.self) { try OpenAPIJobs.write(path: remote.folder + "/remote.yaml", baseURL: nil, out: out, force: false) }
        #expect(!FileManager.default.fileExists(atPath: out))
        let hostOnly = Self.remote.replacingOccurrences(of: "https://schemas.example.com/pet.yaml", with: "//schemas.example.com/pet.yaml")
        let unused = try read([("unused.yaml", hostOnly.replacingOccurrences(of: "/pets:\n    get:", with: "/pets:\n    put:"))])
        defer { try? FileManager.default.removeItem(atPath: unused.folder) }
        #expect(unused.error == nil)
        #expect(unused.yaml?.contains("  - name: owners\n") == true)
        let stopped = try read([("host.yaml", hostOnly)])
        defer { try? FileManager.default.removeItem(atPath: stopped.folder) }
        #expect(stopped.error?.hasPrefix("host.yaml at /paths/~1pets/get/responses/200/content/application~1json/schema/items: "
            + "the $ref '//schemas.example.com/pet.yaml#/components/schemas/Pet' is on another host") == true)
    }

    @Test("oauth2 asks for the scopes the written jobs' requirements name, in the flow's order, else the flow's own")
    func oauthScopes() throws {
        let read = try read([("scoped.yaml", Self.scoped)])
        defer { try? FileManager.default.removeItem(atPath: read.folder) }
        #expect(read.error == nil)
        #expect(read.yaml?.components(separatedBy: "jobs:\n")[0] == #"""
        # written by `mirror init --openapi` from scoped.yaml; check it with `mirror check`, then `mirror run` it
        version: 1
        auth:
          oauth:
            type: oauth2
            token_url: "https://zoo.test/token"
            client_id: "${OAUTH_CLIENT_ID}"
            client_secret: "${OAUTH_CLIENT_SECRET}"
            # the scopes the written jobs' security requirements name
            scope: "read:pets read:owners zoo:extra"
          partner:
            type: oauth2
            token_url: "https://zoo.test/partner/token"
            client_id: "${PARTNER_CLIENT_ID}"
            client_secret: "${PARTNER_CLIENT_SECRET}"
            # the scopes of its clientCredentials flow: no written job's requirement names one
            scope: "b a"

        """#)
    }

    @Test("schemes one requirement combines: one as auth, the rest as headers, else the operation left out; of alternatives, the first mirror writes")
    func combinedSecurity() throws {
        let read = try read([("guarded.yaml", Self.guarded)])
        defer { try? FileManager.default.removeItem(atPath: read.folder) }
        #expect(read.error == nil)
        #expect(read.yaml == #"""
        # written by `mirror init --openapi` from guarded.yaml; check it with `mirror check`, then `mirror run` it
        version: 1
        auth:
          basicAuth:
            type: basic
            username: "${BASIC_AUTH_USERNAME}"
            password: "${BASIC_AUTH_PASSWORD}"
          key:
            type: api_key
            header: "X-Api-Key"
            value: "${KEY_KEY}"
        jobs:
          - name: pets
            # no page, offset or cursor parameter and no next URL in the 200 response: one request
            url: "http://zoo.test/pets"
            # the 200 response's schema is an array of objects
            records: "."
            # the records' schema has `id`
            id: id
            table: pets
            # its security requirement sends 'basicAuth' and 'key' together: 'basicAuth' as `auth:`, 'key' in `headers:`
            auth: basicAuth
            headers: { "X-Api-Key": "${KEY_KEY}" }
          - name: owners
            # no page, offset or cursor parameter and no next URL in the 200 response: one request
            url: "http://zoo.test/owners"
            # the 200 response's schema is an array of objects
            records: "."
            # the records' schema has `id`
            id: id
            table: owners
            # the first of its security requirements mirror writes; the others: 'openid' (openIdConnect), 'basicAuth'
            auth: key
        # GET /keepers: its security requirement sends 'basicAuth' and 'oauth' together, and a job carries one `auth:` and fixed `headers:`: only an apiKey in a header or an http bearer token is a fixed header, not 'basicAuth' (http basic) or 'oauth' (oauth2)
        """# + "\n")
    }

    @Test("a POST search pages in its body: page numbers and a cursor; a POST that creates or has no paging members stays out")
    func postSearch() throws {
        let read = try read([("search.yaml", Self.search)])
        defer { try? FileManager.default.removeItem(atPath: read.folder) }
        #expect(read.error == nil)
        #expect(read.yaml == #"""
        # written by `mirror init --openapi` from search.yaml; check it with `mirror check`, then `mirror run` it
        version: 1
        jobs:
          - name: pets_search
            # body member `page` (from 1) and `per_page` (2): page numbers; the walk ends after the `total_pages` pages
            url: "http://zoo.test/pets/search"
            method: POST
            body: { query: "", page: "{page}", per_page: 2 }
            pages: { from: 1, step: 1 }
            stop: { pages: total_pages }
            # the 200 response's `results` is its array of objects
            records: results
            # the records' schema has `id`
            id: id
            table: pets_search
          - name: events
            # the first request leaves the body's `cursor` out
            url: "http://zoo.test/events"
            method: POST
            body: { cursor: "{cursor}" }
            # body member `cursor`: the 200 response's `next_cursor` holds the next page's cursor and `has_more` says whether more follow
            next: { cursor: next_cursor }
            stop: { has_more: has_more }
            # the 200 response's `data` is its array of objects
            records: data
            # the records' schema has `id`
            id: id
            table: events
        # POST /owners/search: its request body requires `name`, which has no default or example to send
        """# + "\n")
    }

    static let pets = #"""
        openapi: 3.0.3
        servers:
          - url: https://{host}/v1
            variables:
              host: { default: api.example.com }
        security:
          - bearerAuth: []
        paths:
          /pets:
            get:
              parameters:
                - { name: page, in: query, schema: { type: integer, default: 1 } }
                - $ref: "#/components/parameters/PerPage"
              responses:
                "200":
                  content:
                    application/json:
                      schema: { $ref: "#/components/schemas/PetPage" }
          /pets/{pet_id}/visits:
            get:
              parameters:
                - { name: pet_id, in: path, required: true, schema: { type: integer } }
                - { name: offset, in: query, schema: { type: integer } }
                - { name: limit, in: query, schema: { type: integer, maximum: 200 } }
              responses:
                "200":
                  content:
                    application/json:
                      schema: { $ref: "common.yaml#/components/schemas/VisitList" }
          /search:
            get:
              responses:
                "200":
                  content:
                    application/json:
                      schema: { type: object, properties: { hits: { type: integer } } }
          /owners/{owner}/pets/{name}:
            get:
              responses:
                "200":
                  content:
                    application/json:
                      schema: { type: array, items: { $ref: "#/components/schemas/Pet" } }
          /pets/{pet_id}:
            get:
              responses:
                "200":
                  content:
                    application/json:
                      schema: { $ref: "#/components/schemas/Pet" }
        components:
          parameters:
            PerPage: { name: per_page, in: query, schema: { type: integer, default: 20, maximum: 100 } }
          securitySchemes:
            bearerAuth: { type: http, scheme: bearer }
          schemas:
            Pet:
              type: object
              required: [pet_id, name]
              properties:
                pet_id: { type: integer }
                name: { type: string }
            PetPage:
              type: object
              properties:
                data: { type: array, items: { $ref: "#/components/schemas/Pet" } }
                total_pages: { type: integer }
        """# + "\n"

    static let common = #"""
        components:
          schemas:
            Visit:
              type: object
              properties: { id: { type: string }, at: { type: string } }
            VisitList:
              allOf:
                - type: object
                  properties:
                    visits: { type: array, items: { $ref: "#/components/schemas/Visit" } }
                - type: object
                  properties:
                    total: { type: integer }
        """# + "\n"

    static let shop = #"""
        {"openapi": "3.1.0",
         "servers": [{"url": "https://shop.example.com/api/"}],
         "paths": {
          "/v1/customers": {"get": {
            "security": [{"oauth": []}],
            "parameters": [{"name": "limit", "in": "query", "schema": {"type": "integer"}},
                           {"name": "starting_after", "in": "query", "schema": {"type": "string"}}],
            "responses": {"200": {"content": {"application/json": {"schema": {"type": "object", "properties": {
              "object": {"type": "string"}, "has_more": {"type": "boolean"},
              "data": {"type": "array", "items": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}}}}}}}}}},
          "/v1/events": {"get": {
            "security": [{"keyQuery": []}],
            "parameters": [{"name": "page_token", "in": "query", "schema": {"type": ["string", "null"]}}],
            "responses": {"200": {"content": {"application/json": {"schema": {"type": "object", "properties": {
              "next_page_token": {"anyOf": [{"type": "string"}, {"type": "null"}]},
              "events": {"type": "array", "items": {"$ref": "#/components/schemas/Event"}},
              "included": {"type": "array", "items": {"$ref": "#/components/schemas/Event"}},
              "data": {"type": "array", "items": {"$ref": "#/components/schemas/Event"}}}}}}}}}},
          "/v1/feed": {"get": {
            "security": [{}, {"basicAuth": []}],
            "responses": {"200": {"content": {"application/json": {"schema": {"type": "object", "properties": {
              "links": {"type": "object", "properties": {"next": {"type": ["string", "null"], "format": "uri"}}},
              "entries": {"type": "array", "items": {"type": "object", "required": ["uuid"], "properties": {"uuid": {"type": "string"}}}}}}}}}}}},
          "/v1/tags": {"get": {
            "security": [{"basicAuth": []}],
            "responses": {"200": {"content": {"application/json": {"schema": {"type": "array", "items": {"type": "object", "properties": {"slug": {"type": "string"}}, "required": ["slug"]}}}}}}}},
          "/v1/notes": {"get": {
            "security": [{"openid": []}],
            "responses": {"200": {"content": {"application/json": {"schema": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}, "text": {"type": "string"}}}}}}}}}}
         },
         "components": {"securitySchemes": {
           "oauth": {"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": "https://shop.example.com/oauth/token", "scopes": {}}}},
           "keyQuery": {"type": "apiKey", "in": "query", "name": "api_key"},
           "basicAuth": {"type": "http", "scheme": "basic"},
           "openid": {"type": "openIdConnect", "openIdConnectUrl": "https://shop.example.com/.well-known/openid-configuration"}},
           "schemas": {"Event": {"type": "object", "properties": {"id": {"type": "integer"}}}}}
        }
        """# + "\n"

    static let relative = #"""
        openapi: 3.0.0
        servers: [{url: /api/v3}]
        paths:
          /pet/findByStatus:
            get:
              parameters:
                - { name: status, in: query, schema: { type: string } }
              responses:
                "200":
                  content:
                    application/xml:
                      schema: { type: array, items: { $ref: "#/components/schemas/Pet" } }
                    application/json:
                      schema: { type: array, items: { $ref: "#/components/schemas/Pet" } }
        components:
          schemas:
            Pet: { type: object, properties: { id: { type: integer, format: int64 }, name: { type: string } } }
        """# + "\n"

    static let noList = #"""
        openapi: 3.0.0
        servers: [{url: "http://h"}]
        paths:
          /status:
            get:
              responses:
                "200":
                  content:
                    application/json:
                      schema: {type: object}
          /exports/{day}.json:
            get:
              responses:
                "200":
                  content:
                    application/json:
                      schema: {type: array, items: {type: object, properties: {id: {type: integer}}}}
        """# + "\n"

    static let twoPets = #"""
        openapi: 3.0.0
        servers: [{url: "http://zoo.test"}]
        paths:
          /pets:
            get:
              responses:
                "200": { content: { application/json: { schema: { $ref: "#/components/schemas/Pets" } } } }
          /v2/pets:
            get:
              responses:
                "200": { content: { application/json: { schema: { $ref: "#/components/schemas/Pets" } } } }
          /v2/pets/{id}/visits:
            get:
              responses:
                "200": { content: { application/json: { schema: { $ref: "#/components/schemas/Pets" } } } }
        components:
          schemas:
            Pets: { type: array, items: { type: object, properties: { id: { type: integer } } } }
        """# + "\n"

    static let remote = #"""
        openapi: 3.0.0
        servers: [{url: "http://zoo.test"}]
        paths:
          /owners:
            get:
              responses:
                "200": { content: { application/json: { schema: { type: array, items: { type: object, properties: { id: { type: integer } } } } } } }
                "404": { content: { application/json: { schema: { $ref: "https://schemas.example.com/errors.yaml#/Error" } } } }
          /pets:
            get:
              responses:
                "200":
                  content:
                    application/json:
                      schema:
                        type: array
                        items: { $ref: "https://schemas.example.com/pet.yaml#/components/schemas/Pet" }
        """# + "\n"

    static let scoped = #"""
        openapi: 3.0.0
        servers: [{url: "http://zoo.test"}]
        paths:
          /pets:
            get:
              security: [{ oauth: [read:pets] }]
              responses:
                "200": { content: { application/json: { schema: { $ref: "#/components/schemas/List" } } } }
          /owners:
            get:
              security: [{ oauth: [zoo:extra, read:owners, read:pets] }]
              responses:
                "200": { content: { application/json: { schema: { $ref: "#/components/schemas/List" } } } }
          /keepers:
            get:
              security: [{ oauth: [write:pets] }]
              responses:
                "200": { content: { application/json: { schema: { type: object } } } }
          /partners:
            get:
              security: [{ partner: [] }]
              responses:
                "200": { content: { application/json: { schema: { $ref: "#/components/schemas/List" } } } }
        components:
          securitySchemes:
            oauth:
              type: oauth2
              flows:
                clientCredentials:
                  tokenUrl: https://zoo.test/token
                  scopes: { read:pets: pets, write:pets: change pets, read:owners: owners }
            partner:
              type: oauth2
              flows: { clientCredentials: { tokenUrl: https://zoo.test/partner/token, scopes: { b: b, a: a } } }
          schemas:
            List: { type: array, items: { type: object, properties: { id: { type: integer } } } }
        """# + "\n"

    static let guarded = #"""
        openapi: 3.0.0
        servers: [{url: "http://zoo.test"}]
        paths:
          /pets:
            get:
              security: [{ basicAuth: [], key: [] }]
              responses:
                "200": { content: { application/json: { schema: { $ref: "#/components/schemas/List" } } } }
          /owners:
            get:
              security: [{ openid: [] }, { key: [] }, { basicAuth: [] }]
              responses:
                "200": { content: { application/json: { schema: { $ref: "#/components/schemas/List" } } } }
          /keepers:
            get:
              security: [{ basicAuth: [], oauth: [] }]
              responses:
                "200": { content: { application/json: { schema: { $ref: "#/components/schemas/List" } } } }
        components:
          securitySchemes:
            basicAuth: { type: http, scheme: basic }
            key: { type: apiKey, in: header, name: X-Api-Key }
            openid: { type: openIdConnect, openIdConnectUrl: "https://zoo.test/.well-known/openid-configuration" }
            oauth: { type: oauth2, flows: { clientCredentials: { tokenUrl: "https://zoo.test/token", scopes: {} } } }
          schemas:
            List: { type: array, items: { type: object, properties: { id: { type: integer } } } }
        """# + "\n"

    static let search = #"""
        openapi: 3.0.0
        servers: [{url: "http://zoo.test"}]
        paths:
          /pets/search:
            post:
              requestBody:
                content:
                  application/json:
                    schema:
                      type: object
                      required: [query]
                      properties:
                        query: { type: string, default: "" }
                        page: { type: integer, minimum: 1 }
                        per_page: { type: integer, default: 2 }
                        sort: { type: string }
              responses:
                "200":
                  content:
                    application/json:
                      schema:
                        type: object
                        properties:
                          results: { type: array, items: { $ref: "#/components/schemas/Pet" } }
                          total_pages: { type: integer }
          /events:
            post:
              requestBody: { $ref: "#/components/requestBodies/Cursor" }
              responses:
                "200":
                  content:
                    application/json:
                      schema:
                        type: object
                        properties:
                          data: { type: array, items: { $ref: "#/components/schemas/Pet" } }
                          next_cursor: { type: string }
                          has_more: { type: boolean }
          /pets:
            post:
              requestBody: { content: { application/json: { schema: { $ref: "#/components/schemas/Pet" } } } }
              responses:
                "201": { content: { application/json: { schema: { $ref: "#/components/schemas/Pet" } } } }
          /reports:
            post:
              requestBody: { content: { application/json: { schema: { type: object, properties: { q: { type: string } } } } } }
              responses:
                "200": { content: { application/json: { schema: { type: array, items: { $ref: "#/components/schemas/Pet" } } } } }
          /owners/search:
            post:
              requestBody:
                content:
                  application/json:
                    schema:
                      type: object
                      required: [name]
                      properties: { name: { type: string }, offset: { type: integer }, limit: { type: integer, maximum: 50 } }
              responses:
                "200": { content: { application/json: { schema: { type: array, items: { $ref: "#/components/schemas/Pet" } } } } }
        components:
          requestBodies:
            Cursor:
              content:
                application/json:
                  schema: { type: object, properties: { cursor: { type: string }, limit: { type: integer, default: 100 } } }
          schemas:
            Pet: { type: object, properties: { id: { type: integer } } }
        """# + "\n"
}
