"""One table of numbered rows served through the paginations of real web frameworks, for
mirror init's tests: each pagination its own path, all in one server.

    python frameworks_server.py --rows 53

When ready it prints one JSON line to stdout (then flushes):

    {"port": P, "url": "http://127.0.0.1:P", "ids": [1, 2, …], "paths": ["/drf/page/", …]}

| path | framework | pagination |
| --- | --- | --- |
| `/drf/page/` | Django REST framework | `PageNumberPagination`, 10 a page: `count`, `next`, `previous`, `results` |
| `/drf/limit/` | Django REST framework | `LimitOffsetPagination`, 10 a page: `count`, `next`, `previous`, `results` |
| `/drf/cursor/` | Django REST framework | `CursorPagination`, 10 a page, ordered by `id`: `next`, `previous`, `results` |
| `/drf/jsonapi/` | Django REST framework, djangorestframework-jsonapi | JSON:API documents, `JsonApiPageNumberPagination` (`page[number]`), 10 a page: `data`, `links.next`, `meta.pagination` |
| `/drf/jsonapi/limit/` | Django REST framework, djangorestframework-jsonapi | JSON:API documents, `JsonApiLimitOffsetPagination` (`page[limit]`, `page[offset]`), 10 a page: `data`, `links.next`, `meta.pagination` |
| `/fastapi/items` | FastAPI, fastapi-pagination | `Page` (50 a page): `items`, `total`, `page`, `size`, `pages` |
| `/fastapi/limit` | FastAPI, fastapi-pagination | `LimitOffsetPage` (50 a page): `items`, `total`, `limit`, `offset` |
| `/smorest/items` | flask-smorest | `@blp.paginate()` (10 a page): the records as a top-level array, the page in the `X-Pagination` header |
| `/graphql` | Strawberry | a Relay connection, `items(first: N, after: CURSOR)`, with `relay.ListConnection`: `edges` of `{cursor, node}` and `pageInfo { hasNextPage endCursor }` (Strawberry offers no `nodes`) |
| `/drf/schema/` | Django REST framework, drf-spectacular | its own OpenAPI 3.0.3 description of `/drf/page/`, `/drf/limit/` and `/drf/cursor/` (YAML; JSON with `?format=json`) |
| `/openapi.json` | FastAPI | its own OpenAPI 3.1 description of `/fastapi/items` and `/fastapi/limit` |
| `/smorest/openapi.json` | flask-smorest | its own OpenAPI 3.0.2 description of `/smorest/items` |

Every record is `{"id": N, "name": "nN"}`, N from 1 to --rows, in id order; a JSON:API
document holds it as `{"type": "items", "id": "N", "attributes": {"name": "nN"}}`, the GraphQL
connection as the node `{"id": ID, "number": N, "name": "nN"}`, ID Relay's global id (the base64
of `Item:N`). Django and
Flask are WSGI apps and run behind uvicorn's WSGI middleware; one ASGI app sends each path
to its framework. The server stops on SIGTERM, SIGINT or the end of its stdin.
"""
import argparse
import asyncio
import json
import socket
import sys
import threading

from stopping import stop_event

import django  # noqa: E402
from django.conf import settings  # noqa: E402


def django_app(rows):
    settings.configure(
        DEBUG=False, ALLOWED_HOSTS=["*"], ROOT_URLCONF=__name__, SECRET_KEY="mirror-frameworks",
        INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "rest_framework", "drf_spectacular"],
        DATABASES={}, MIDDLEWARE=[], USE_TZ=True,
        REST_FRAMEWORK={"DEFAULT_AUTHENTICATION_CLASSES": [], "DEFAULT_PERMISSION_CLASSES": [],
                        "UNAUTHENTICATED_USER": None, "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
                        "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema"},
    )
    django.setup()
    from django.core.wsgi import get_wsgi_application
    from django.urls import path
    from rest_framework import pagination, serializers
    from rest_framework.generics import ListAPIView
    from rest_framework_json_api import pagination as json_api_pagination, renderers as json_api_renderers

    class Record(dict):
        """A row; CursorPagination reads its ordering field as an attribute."""
        def __getattr__(self, name):
            try:
                return self[name]
            except KeyError:
                raise AttributeError(name) from None

    class Rows(list):
        """The rows as a queryset enough for CursorPagination: `order_by` and `filter(id__gt=…)`."""
        def order_by(self, *fields):
            reverse = fields[0].startswith("-")
            return Rows(sorted(self, key=lambda row: row["id"], reverse=reverse))

        def filter(self, *args, **lookups):
            (lookup, value), = lookups.items()
            value = int(value)
            keep = {"id__gt": lambda n: n > value, "id__gte": lambda n: n >= value,
                    "id__lt": lambda n: n < value, "id__lte": lambda n: n <= value}[lookup]
            return Rows(row for row in self if keep(row["id"]))

    table = [Record(row) for row in rows]

    class Pages(pagination.PageNumberPagination):
        page_size = 10

    class Limits(pagination.LimitOffsetPagination):
        default_limit = 10

    class Cursors(pagination.CursorPagination):
        page_size = 10
        ordering = "id"

    class JsonApiPages(json_api_pagination.JsonApiPageNumberPagination):
        page_size = 10

    class JsonApiLimits(json_api_pagination.JsonApiLimitOffsetPagination):
        default_limit = 10

    class ItemSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        name = serializers.CharField()

    def view(paginator, json_api=False):
        class Items(ListAPIView):
            pagination_class = paginator
            # One serializer a pagination, so that drf-spectacular names each paged list apart
            # (PaginatedPageItemList, …) rather than describing all three as one of them.
            serializer_class = type(paginator.__name__.rstrip("s") + "ItemSerializer", (ItemSerializer,), {})

            def get_queryset(self):
                return Rows(table)

        if json_api:
            Items.renderer_classes = [json_api_renderers.JSONRenderer]
            Items.resource_name = "items"
            Items.schema = None  # left out of /drf/schema/
        return Items.as_view()

    from drf_spectacular.views import SpectacularAPIView

    module = sys.modules[__name__]
    module.urlpatterns = [path("drf/page/", view(Pages)), path("drf/limit/", view(Limits)),
                          path("drf/cursor/", view(Cursors)), path("drf/jsonapi/", view(JsonApiPages, True)),
                          path("drf/jsonapi/limit/", view(JsonApiLimits, True)),
                          path("drf/schema/", SpectacularAPIView.as_view())]
    # drf-spectacular loads its extensions' target classes on a description's first making, and
    # two threads doing so at once make it fail (HTTP 500): the first one is made here, in one.
    from drf_spectacular.generators import SchemaGenerator
    SchemaGenerator().get_schema(request=None, public=True)
    return get_wsgi_application()


def fastapi_app(rows):
    from fastapi import FastAPI
    from fastapi_pagination import LimitOffsetPage, Page, add_pagination, paginate
    from fastapi_pagination.utils import disable_installed_extensions_check
    from pydantic import BaseModel

    class Item(BaseModel):
        id: int
        name: str

    # Django is installed for the DRF paths; the rows are a list, paged by the default `paginate`.
    disable_installed_extensions_check()
    app = FastAPI()
    items = [Item(**row) for row in rows]

    @app.get("/fastapi/items")
    def page() -> Page[Item]:
        return paginate(items)

    @app.get("/fastapi/limit")
    def limit() -> LimitOffsetPage[Item]:
        return paginate(items)

    add_pagination(app)
    return app


def smorest_app(rows):
    from flask import Flask
    from flask.views import MethodView
    from flask_smorest import Api, Blueprint
    import marshmallow as ma

    app = Flask("frameworks")
    app.config.update(API_TITLE="frameworks", API_VERSION="1", OPENAPI_VERSION="3.0.2",
                      OPENAPI_URL_PREFIX="/smorest", OPENAPI_JSON_PATH="openapi.json")
    api = Api(app)
    blp = Blueprint("items", "items", url_prefix="/smorest")

    class ItemSchema(ma.Schema):
        id = ma.fields.Int()
        name = ma.fields.Str()

    @blp.route("/items")
    class Items(MethodView):
        @blp.response(200, ItemSchema(many=True))
        @blp.paginate()
        def get(self, pagination_parameters):
            pagination_parameters.item_count = len(rows)
            first = pagination_parameters.first_item
            return rows[first:first + pagination_parameters.page_size]

    api.register_blueprint(blp)
    return app


def graphql_app(rows):
    import strawberry
    from strawberry import relay
    from strawberry.asgi import GraphQL

    @strawberry.type
    class Item(relay.Node):
        # The global id's own part, which Strawberry keeps out of the type's fields.
        key: relay.NodeID[int]
        number: int
        name: str

        @classmethod
        def resolve_nodes(cls, *, info, node_ids, required=False):
            wanted = {int(node_id) for node_id in node_ids}
            return [Item(key=row["id"], number=row["id"], name=row["name"]) for row in rows if row["id"] in wanted]

    @strawberry.type
    class Query:
        @relay.connection(relay.ListConnection[Item])
        def items(self) -> list[Item]:
            return [Item(key=row["id"], number=row["id"], name=row["name"]) for row in rows]

    return GraphQL(strawberry.Schema(query=Query))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=53)
    args = parser.parse_args()
    rows = [{"id": i, "name": f"n{i}"} for i in range(1, args.rows + 1)]

    import uvicorn
    from uvicorn.middleware.wsgi import WSGIMiddleware

    drf = WSGIMiddleware(django_app(rows))
    fastapi = fastapi_app(rows)
    smorest = WSGIMiddleware(smorest_app(rows))
    graphql = graphql_app(rows)

    async def app(scope, receive, send):
        path = scope.get("path", "")
        target = (drf if path.startswith("/drf/") else smorest if path.startswith("/smorest/")
                  else graphql if path == "/graphql" else fastapi)
        await target(scope, receive, send)

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    # Listening before the ready line: a connection waits in the backlog until uvicorn accepts it.
    listener.listen(128)
    port = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    stop = stop_event()
    threading.Thread(target=lambda: (stop.wait(), setattr(server, "should_exit", True)), daemon=True).start()
    base = f"http://127.0.0.1:{port}"
    paths = ["/drf/page/", "/drf/limit/", "/drf/cursor/", "/drf/jsonapi/", "/drf/jsonapi/limit/", "/fastapi/items", "/fastapi/limit", "/smorest/items"]
    print(json.dumps({"port": port, "url": base, "ids": [row["id"] for row in rows], "paths": paths}), flush=True)
    asyncio.run(server.serve(sockets=[listener]))
    sys.exit(0)


if __name__ == "__main__":
    main()
