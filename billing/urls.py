from django.urls import path

from billing import views

urlpatterns = [
    path("usage/record", views.UsageRecordApi.as_view()),
]
